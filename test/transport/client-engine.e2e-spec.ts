import { Inject, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientsModule, type ClientProxy } from '@nestjs/microservices';
import type { ConsumeMessage } from 'amqplib';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { NotConnectedError, planDelayTopology, RetryEngine, RetryModule, RetryPublisher } from 'nestjs-amqp-retry';
import { RetryClient } from 'nestjs-amqp-retry/transport';
import { connectionsNamed } from '../support/broker-control.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { RecordingLogger } from '../support/recording-logger.js';

const CLIENT = 'ORDERS_CLIENT';

/**
 * Holds the injected client, so the test reaches it as the application's code would: typed as RetryClient, as the
 * README says, since its `emit` takes the third argument `{ delay }`.
 */
class Holder {
  constructor(@Inject(CLIENT) readonly client: RetryClient) {}
}

/**
 * Typed as Nest's ClientProxy (the usual convention), the same client cannot be given a delay: ClientProxy.emit takes
 * (pattern, data). tsc checks this (npm run typecheck): should Nest ever widen emit, the directive fails and the
 * README's advice to inject RetryClient is to be looked at again.
 */
export function emitThroughClientProxy(client: ClientProxy) {
  // @ts-expect-error TS2554 "Expected 2 arguments, but got 3": inject the client typed as RetryClient for { delay }
  return client.emit('order.reminder', { id: 2 }, { delay: 800 });
}

/**
 * RetryClient in an application that has RetryModule, given the module's engine through ClientsModule.registerAsync:
 * one pair of connections and one delay forwarder for the application, and a shutdown that closes each once.
 */
describe("RetryClient on a RetryModule's engine", () => {
  const suite = useSuite('e2e.client-engine');
  let prefix: string;
  let connectionName: string;
  let logger: RecordingLogger;
  const arrivals: { at: number; message: ConsumeMessage }[] = [];

  /** The application: RetryModule with a ladder of its own, and a RetryClient registered on its engine. */
  async function start(): Promise<INestApplicationContext> {
    @Module({
      imports: [
        RetryModule.forRoot({ url: AMQP_URL, connectionName, delayedDelivery: { prefix } }),
        ClientsModule.registerAsync([
          {
            name: CLIENT,
            inject: [RetryEngine],
            // The connection options a user would also give a client of its own: with `engine`, they are not used.
            useFactory: (engine: RetryEngine) => ({
              customClass: RetryClient,
              options: { url: AMQP_URL, queue: suite.queue, engine, connectionName, delayedDelivery: { prefix } },
            }),
          },
        ]),
      ],
      providers: [Holder],
    })
    class AppModule {}
    const started = await NestFactory.createApplicationContext(AppModule, { logger });
    await started.init();
    return started;
  }

  beforeEach(async () => {
    prefix = suite.ladder();
    connectionName = uniqueName('e2e-client-engine');
    logger = new RecordingLogger();
    arrivals.length = 0;
    await suite.broker.channel.assertQueue(suite.queue, { durable: true });
    await suite.broker.channel.consume(suite.queue, (message) => {
      if (!message) return;
      arrivals.push({ at: Date.now(), message });
      suite.broker.channel.ack(message);
      // A request: answer it as a Nest server would, through direct reply-to.
      const { replyTo, correlationId } = message.properties;
      if (typeof replyTo === 'string' && replyTo !== '') {
        const reply = { err: null, response: { served: true }, isDisposed: true, id: correlationId };
        suite.broker.channel.publish('', replyTo, Buffer.from(JSON.stringify(reply)), { correlationId });
      }
    });
  });

  it('opens no connection and no forwarder of its own, and its delayed emits arrive on time', async () => {
    suite.app = await start();
    const { client } = suite.app.get(Holder);
    await client.connect();
    await lastValueFrom(client.emit('order.created', { id: 1 }), { defaultValue: undefined });
    const sent = Date.now();
    await lastValueFrom(client.emit('order.reminder', { id: 2 }, { delay: 800 }), { defaultValue: undefined });

    await waitFor(() => arrivals.length === 2, 'the event and the delayed event', 6_000);
    expect(arrivals.map((a) => JSON.parse(a.message.content.toString()).pattern)).toEqual(['order.created', 'order.reminder']);
    expect(arrivals[1].at - sent).toBeGreaterThanOrEqual(800);

    // One pair for the whole application: the module's consuming and publishing connections.
    expect((await connectionsNamed(connectionName)).sort()).toEqual([`${connectionName} consume`, `${connectionName} publish`]);
    // One forwarder on the ladder's ready queue: the module's.
    expect(await suite.broker.consumers(planDelayTopology(prefix).readyQueue)).toBe(1);
    expect(client.unwrap<RetryEngine>() === suite.app.get(RetryEngine)).toBe(true);

    // A request opens the client's reply channel, on the module's publishing connection: still one pair.
    expect(await firstValueFrom(client.send('order.get', { id: 3 }))).toEqual({ served: true });
    expect((await connectionsNamed(connectionName)).length).toBe(2);

    // Nest's own shutdown order (ClientsModule closes the client, RetryModule its engine): every connection closes, quietly.
    await suite.app.close();
    suite.app = undefined;
    await waitFor(async () => (await connectionsNamed(connectionName)).length === 0, 'every connection closed');
    expect(logger.lines.filter((line) => /^(error|warn)/.test(line))).toEqual([]);
  });

  it("closing the client leaves the module's engine publishing; app.close() then closes every connection, once, quietly", async () => {
    suite.app = await start();
    const { client } = suite.app.get(Holder);
    await lastValueFrom(client.emit('order.created', { id: 1 }), { defaultValue: undefined });
    await client.close();
    await suite.app.get(RetryPublisher).publish('', suite.queue, { id: 2 }, { delay: 200 });
    await waitFor(() => arrivals.length === 2, 'the event and the module publish after the client closed', 5_000);
    expect((await connectionsNamed(connectionName)).length).toBe(2);

    const engine = suite.app.get(RetryEngine);
    await suite.app.close(); // ClientsModule closes the client again (its shutdown hook); the module closes its engine
    suite.app = undefined;
    await waitFor(async () => (await connectionsNamed(connectionName)).length === 0, 'every connection closed');
    expect(logger.lines.filter((line) => line.startsWith('error'))).toEqual([]);
    // Nothing opens again after the shutdown: the client and the engine both refuse, naming why.
    await expect(lastValueFrom(client.emit('order.late', { id: 3 }))).rejects.toThrow(NotConnectedError);
    await expect(engine.connectPublisher()).rejects.toThrow(NotConnectedError);
    expect(await connectionsNamed(connectionName)).toEqual([]);
  });
});
