import { NestFactory } from '@nestjs/core';
import amqp from 'amqplib';
import { RetryEngine, RetryPublisher, retryTopologyNames } from 'nestjs-amqp-retry';
import { RetryHarness } from 'nestjs-amqp-retry/testing';
import { RetryServer, type RetryClient } from 'nestjs-amqp-retry/transport';
import { lastValueFrom } from 'rxjs';
import { HarnessRecorder } from '../../libs/amqp-retry/src/testing/harness.records.js';
import { MemoryBroker } from '../../libs/amqp-retry/src/testing/memory.broker.js';
import { MemoryConnection } from '../../libs/amqp-retry/src/testing/memory.connection.js';
import { VirtualClock } from '../../libs/amqp-retry/src/testing/virtual.clock.js';
import type { ObserverHub } from '../../libs/amqp-retry/src/core/observe/observer.hub.js';
import { AMQP_URL, waitFor, type TestBroker } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { TRANSPORT_CLIENT, transportModule } from './conformance.transport.js';
import { orderTrace, attemptTrace, parkedTrace, scenarioModule, SCENARIOS, type Scenario, type Trace } from './conformance.scenarios.js';

const KEY = 'conformance.key';
const terminal = (outcome: string) => outcome === 'handled' || outcome === 'parked';

/** The scenario on the real broker at AMQP_URL (3.10 by default; 4.3 through scripts/rabbitmq.sh env 4.3). */
async function onBroker(scenario: Scenario, broker: TestBroker, names: { queue: string; exchange: string }): Promise<Trace> {
  const app = await NestFactory.createApplicationContext(scenarioModule(scenario, names, { url: AMQP_URL, shutdownTimeout: '2s' }), {
    logger: false,
  });
  const recorder = new HarnessRecorder(() => 0);
  (app.get(RetryEngine) as unknown as { observers: ObserverHub }).observers.add(recorder);
  try {
    await app.init();
    for (const m of scenario.messages) {
      if (m.delay) {
        await app.get(RetryPublisher).publish(names.exchange, KEY, m.body, { delay: m.delay, messageId: m.messageId });
      } else {
        const body = m.raw ? Buffer.from(String(m.body)) : m.body;
        await broker.publish(names.exchange, KEY, body, { messageId: m.messageId, ...(m.headers ? { headers: m.headers(names.queue) } : {}) });
      }
    }
    await waitFor(
      () => scenario.messages.every((m) => (recorder.attemptsByMessage.get(m.messageId) ?? []).some((a) => terminal(a.outcome))),
      `every message of "${scenario.name}" handled or parked`,
      20_000,
    );
    const parked = scenario.parked > 0 ? await broker.take(`${names.queue}.error`, scenario.parked) : [];
    return {
      attempts: Object.fromEntries(
        scenario.messages.map((m) => [m.messageId, attemptTrace(recorder.attemptsByMessage.get(m.messageId) ?? [], names.queue)]),
      ),
      parked: parked
        .map((p) => parkedTrace(p.properties.headers ?? {}, p.properties.messageId, names.queue))
        .sort((a, b) => String(a.messageId).localeCompare(String(b.messageId))),
      ...(scenario.ordering ? { order: orderTrace(recorder.allAttempts) } : {}),
    };
  } finally {
    await app.close();
  }
}

/** The same scenario on the harness. */
async function onHarness(scenario: Scenario, names: { queue: string; exchange: string }, brokerVersion: string): Promise<Trace> {
  const harness = await RetryHarness.start(scenarioModule(scenario, names, {}), { logger: false, brokerVersion });
  try {
    for (const m of scenario.messages) {
      if (m.delay) {
        await harness.application.get(RetryPublisher).publish(names.exchange, KEY, m.body, { delay: m.delay, messageId: m.messageId });
      } else {
        harness.publish(names.exchange, KEY, m.raw ? String(m.body) : m.body, {
          messageId: m.messageId,
          contentType: 'application/json',
          ...(m.headers ? { headers: m.headers(names.queue) } : {}),
        });
      }
    }
    await harness.settle();
    return {
      attempts: Object.fromEntries(scenario.messages.map((m) => [m.messageId, attemptTrace(harness.attempts(m.messageId), names.queue)])),
      parked: harness
        .parked(names.queue)
        .map((p) => parkedTrace(p.headers, p.messageId, names.queue))
        .sort((a, b) => String(a.messageId).localeCompare(String(b.messageId))),
      ...(scenario.ordering ? { order: orderTrace(harness.attempts()) } : {}),
    };
  } finally {
    await harness.close();
  }
}

/**
 * Mandatory publishes on a confirm channel: two to a queue that holds one message and refuses more
 * (`x-overflow: reject-publish`), one that no queue takes. What each confirm says, and which come back as returns.
 */
async function mandatoryPublishes(connection: Pick<amqp.ChannelModel, 'createConfirmChannel'>, queue: string): Promise<string[]> {
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue(queue, { arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' } });
  const seen: string[] = [];
  channel.on('return', (message: amqp.Message) =>
    seen.push(`${message.content.toString()} returned ${(message.fields as { replyCode?: number }).replyCode}`),
  );
  const confirmed = (name: string) =>
    new Promise<void>((resolve) =>
      channel.publish('', name === 'unroutable' ? `${queue}.nowhere` : queue, Buffer.from(name), { mandatory: true }, (error: unknown) => {
        seen.push(`${name} ${error ? 'nack' : 'ack'}`);
        resolve();
      }),
    );
  await Promise.all(['first', 'second', 'unroutable'].map(confirmed));
  await channel.close();
  return seen.sort();
}

describe('the in-memory broker against a real broker: mandatory publishes and a queue that refuses them', () => {
  const suite = useSuite('e2e.conformance.mandatory');

  it('a full queue with reject-publish nacks the publish and returns nothing; a publish no queue takes is returned', async () => {
    const queue = `${suite.queue}.full`;
    suite.extraQueues.push(queue);
    const real = await amqp.connect(AMQP_URL);
    let onBroker: string[];
    try {
      onBroker = await mandatoryPublishes(real, queue);
      await (await real.createChannel()).deleteQueue(queue);
    } finally {
      await real.close();
    }
    const version = String(real.connection.serverProperties.version);
    const memory = new MemoryConnection(new MemoryBroker(new VirtualClock(0)), () => false, version);
    const inMemory = await mandatoryPublishes(memory as unknown as amqp.ChannelModel, queue);
    expect(onBroker).toEqual(['first ack', 'second nack', 'unroutable ack', 'unroutable returned 312']);
    expect(inMemory).toEqual(onBroker);
  });
});

describe('the test harness against a real broker: the same attempts, tiers, parking reasons and headers', () => {
  const suite = useSuite('e2e.conformance');
  /** The real broker's version: the harness follows that version's dead-lettering rules. */
  let version: string;

  beforeAll(async () => {
    const probe = await amqp.connect(AMQP_URL);
    version = String(probe.connection.serverProperties.version);
    await probe.close();
  });

  it.each(SCENARIOS.map((s) => [s.name, s] as const))('%s', async (_name, scenario) => {
    const { broker, queue } = suite;
    const names = { queue, exchange: `${queue}.in` };
    suite.extraExchanges.push(names.exchange);
    const real = await onBroker(scenario, broker, names);
    const simulated = await onHarness(scenario, names, version);
    expect(Object.values(real.attempts).every((list) => list.length > 0)).toBe(true);
    if (process.env.CONFORMANCE_PRINT) console.log(JSON.stringify(real, null, 1));
    expect(simulated).toEqual(real);
  });

  it("the transport: a request answered, an event retried on its pattern's schedule", async () => {
    const { queue } = suite;
    suite.extraQueues.push(...retryTopologyNames(queue, { delays: ['200ms'] }).tiers);
    const run = async (app: { get<T>(token: unknown): T }, recorder: () => string[], settle: () => Promise<void>) => {
      const client = app.get<RetryClient>(TRANSPORT_CLIENT);
      const reply = await lastValueFrom(client.send<string>('status', { id: 7 }));
      await lastValueFrom(client.emit('requested', { id: 8 }), { defaultValue: undefined });
      await settle();
      return { reply, attempts: recorder() };
    };
    const server = (app: { get<T>(token: unknown): T }) => new RetryServer({ queue, delays: ['1s'], engine: app.get<RetryEngine>(RetryEngine) });
    const app = await NestFactory.create(transportModule(queue, { url: AMQP_URL, shutdownTimeout: '2s' }), { logger: false });
    const recorder = new HarnessRecorder(() => 0);
    (app.get(RetryEngine) as unknown as { observers: ObserverHub }).observers.add(recorder);
    app.connectMicroservice({ strategy: server(app) });
    let real;
    try {
      await app.startAllMicroservices();
      await app.init();
      const events = () => recorder.allAttempts.filter((a) => a.pattern === 'requested');
      real = await run(
        app,
        () => attemptTrace(events(), queue),
        () => waitFor(() => events().some((a) => a.outcome === 'handled'), 'the event handled', 20_000).then(() => undefined),
      );
    } finally {
      await app.close();
    }
    const harness = await RetryHarness.start(transportModule(queue, {}), {
      logger: false,
      brokerVersion: version,
      microservices: (started) => [server(started)],
    });
    let simulated;
    try {
      simulated = await run(
        harness.application,
        () =>
          attemptTrace(
            harness.attempts().filter((a) => a.pattern === 'requested'),
            queue,
          ),
        () => harness.settle(),
      );
    } finally {
      await harness.close();
    }
    expect(real.attempts.length).toBeGreaterThan(0);
    expect(simulated).toEqual(real);
  });
});
