import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MessagePattern, Payload } from '@nestjs/microservices';
import amqp from 'amqplib';
import { firstValueFrom, timeout } from 'rxjs';
import type { RetryObserver } from 'nestjs-amqp-retry';
import { RetryClient, RetryServer } from 'nestjs-amqp-retry/transport';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { settleWindow, useSuite } from '../support/suite.js';

@Controller()
class OrdersController {
  readonly served: number[] = [];

  @MessagePattern('order.get')
  async get(@Payload() query: { id: number; ms?: number }): Promise<{ id: number }> {
    await new Promise((resolve) => setTimeout(resolve, query.ms ?? 0));
    this.served.push(query.id);
    return { id: query.id };
  }
}

@Module({ controllers: [OrdersController] })
class OrdersModule {}

/** A direct reply-to address the broker handed out to a channel of the test's (closed before the address is used). */
async function brokerAddress(): Promise<string> {
  const connection = await amqp.connect(AMQP_URL);
  try {
    const channel = await connection.createChannel();
    await channel.consume('amq.rabbitmq.reply-to', () => undefined, { noAck: true });
    const { queue } = await channel.assertQueue('', { exclusive: true });
    channel.sendToQueue(queue, Buffer.from('{}'), { replyTo: 'amq.rabbitmq.reply-to' });
    const message = await waitFor(async () => (await channel.get(queue, { noAck: true })) || undefined, 'the address');
    return message.properties.replyTo as string;
  } finally {
    await connection.close();
  }
}

/**
 * An address of the broker's own form whose pid names a node the broker does not know: one digit of the node's name
 * changed. Its form passes any check a client can make; the broker closes the connection that asks about it.
 */
function wellFormedForgery(address: string): string {
  const [pid, key] = address.slice('amq.rabbitmq.reply-to.'.length).split('.');
  const term = Buffer.from(pid, 'base64');
  const digit = term.indexOf('@') + 1; // the node's name is `reply@<digits>`
  term[digit] = term[digit] === 0x31 ? 0x32 : 0x31;
  return `amq.rabbitmq.reply-to.${term.toString('base64')}.${key}`;
}

/**
 * Any client can send a request whose `replyTo` it made up. RabbitMQ closes the whole connection that asks about or
 * publishes to an address it cannot decode (541 INTERNAL_ERROR): that must cost the forged request its reply, and
 * nothing else, neither the server's publishing connection nor an honest caller's answer.
 */
describe('requests with a forged direct reply-to address', () => {
  const suite = useSuite<INestMicroservice>('e2e.transport.forged');

  it("drops only the forged requests' replies: honest callers in flight get theirs, the publishing connection stays up", async () => {
    const lost: string[] = [];
    const watcher: RetryObserver = { connectionLost: (event) => void lost.push(event.role) };
    const logger = new RecordingLogger();
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false, observers: [watcher] });
    suite.app = await NestFactory.createMicroservice(OrdersModule, { strategy: server, logger: false });
    suite.app.useLogger(logger);
    await suite.app.listen();
    const client = new RetryClient({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false });
    suite.clients.push(client);
    await client.connect();

    const malformed = 'amq.rabbitmq.reply-to.g1h2AA==.forged';
    const forged = wellFormedForgery(await brokerAddress());
    const forge = (id: number, replyTo: string) =>
      suite.broker.publish('', suite.queue, { pattern: 'order.get', data: { id }, id: `forged-${id}` }, { replyTo, correlationId: `forged-${id}` });
    // Honest requests whose replies come before, between and after the forged ones' (each handler waits `ms`).
    const honest = [1, 2, 3].map((id) => firstValueFrom(client.send('order.get', { id, ms: [0, 150, 600][id - 1] }).pipe(timeout(15_000))));
    await forge(101, forged);
    await forge(102, malformed);
    await forge(103, forged);
    expect(await Promise.all(honest)).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
    const controller = suite.app.get(OrdersController);
    await waitFor(() => controller.served.length === 6, 'every request served');

    // One warning per forged request, saying why its reply was dropped; none about an honest caller.
    const warnings = () => logger.matching(/^warn Could not reply/).map(({ line }) => line);
    await waitFor(() => warnings().length === 3, 'a warning per forged request');
    const dropped = (address: string, reason: string) =>
      `warn Could not reply to "order.get" at "${address}": ${reason}, so its reply is dropped; the request is acked, not retried`;
    const lines = warnings();
    expect(lines.filter((line) => line.includes(`"${malformed}"`))).toEqual([
      dropped(malformed, 'it is no address RabbitMQ hands out (its pid or key is not base64)'),
    ]);
    // A well-formed forgery: 3.10 and 4.3 close the probe's connection when asked about it; 4.0 says no such address exists.
    const forgedReasons = [
      'the broker closed the connection (Connection closed: 541 (INTERNAL-ERROR) with message "INTERNAL_ERROR") when asked about it',
      'the caller is gone (its reply address no longer exists)',
    ].map((reason) => dropped(forged, reason));
    const forgedLines = lines.filter((line) => line.includes(`"${forged}"`));
    expect(forgedLines).toHaveLength(2);
    expect(forgedReasons).toContain(forgedLines[0]);
    expect(forgedLines[1]).toBe(forgedLines[0]);
    // Neither of the server's own connections went down: only its reply probes' did, once per well-formed forgery.
    expect(lost).toEqual([]);
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'every request acked');
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);

    // After the forgeries, a request is answered as before (the probes' connection is back).
    await expect(firstValueFrom(client.send('order.get', { id: 4 }).pipe(timeout(15_000)))).resolves.toEqual({ id: 4 });
    await settleWindow(300);
    expect(warnings()).toHaveLength(3);
  });
});
