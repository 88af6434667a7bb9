import type { INestApplicationContext } from '@nestjs/common';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { Registry } from 'prom-client';
import { PartitionsPluginError, RetryEngine, type RetryHandlerOptions, type RetryObserver } from 'nestjs-amqp-retry';
import { declareHashExchange } from '../../libs/amqp-retry/src/amqp/hash-exchange.probe.js';
import { handlerFor, startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { usePartitionSuite } from '../support/partitions.js';
import { installTracing } from '../support/tracing.js';
import { redisKind, uniqueSpace } from '../support/stores.js';
import { storeKeyOf } from '../../libs/amqp-retry/src/pipeline/idempotency.step.js';

type Step = { key: string; seq: number };

/**
 * One message in ten fails its first attempt, spread over keys and sequence numbers: were every key to fail at once,
 * every message in the consumer's window would wait behind a hold, and the holds would give way (README "Ordering").
 */
const failsFirst = ({ key, seq }: Step) => (Number(key.slice(1)) * 31 + seq * 17) % 10 === 3;

describe('partitioned queues on a real broker', () => {
  const suite = usePartitionSuite('e2e.parts', 0);

  /** Runs a handler that records every call (per app) and fails the first attempt of every 10th message. */
  function partitionedHandler(options: Partial<RetryHandlerOptions> & { count: number }) {
    suite.uses(options.count);
    const running = new Map<string, number>();
    const seen: Array<Step & { attempt: number; app: string }> = [];
    let overlap = 0;
    const make = (app: string) =>
      handlerFor(
        {
          queue: suite.queue,
          delays: ['200ms'],
          maxAttempts: 3,
          prefetch: 100,
          partitions: { count: options.count, key: { header: 'x-key' }, whileRetrying: 'hold', heartbeat: '200ms', holdGrace: '1s' },
          ...options,
        } as RetryHandlerOptions,
        async (payload, ctx) => {
          const { key, seq } = payload as Step;
          running.set(key, (running.get(key) ?? 0) + 1);
          if (running.get(key)! > 1) overlap++;
          await new Promise((resolve) => setTimeout(resolve, 2));
          running.set(key, running.get(key)! - 1);
          seen.push({ key, seq, attempt: ctx.attempt, app });
          if (ctx.attempt === 1 && failsFirst({ key, seq })) throw new Error(`seq ${seq} fails once`);
        },
      );
    return { make, seen, overlap: () => overlap };
  }

  /** The successful calls of each key, in the order they ran, must be 0, 1, 2, ... */
  function violations(seen: Array<Step & { attempt: number }>, expectedPerKey: number): { outOfOrder: number; missing: number } {
    const lastOk = new Map<string, number>();
    let outOfOrder = 0;
    const failed = (s: Step & { attempt: number }) => s.attempt === 1 && failsFirst(s);
    for (const s of seen) {
      if (failed(s)) continue;
      const last = lastOk.get(s.key) ?? -1;
      if (s.seq !== last + 1) outOfOrder++;
      lastOk.set(s.key, Math.max(last, s.seq));
    }
    let missing = 0;
    for (const last of lastOk.values()) missing += expectedPerKey - 1 - last;
    return { outOfOrder, missing };
  }

  /** Waits (10 s at most) until every running instance consumes at least one partition. */
  const untilEveryAppOwnsAPartition = () =>
    waitFor(
      () =>
        suite.apps.every((app) =>
          app
            .get(RetryEngine)
            .partitions()[0]
            ?.partitions.some((p) => p.consuming),
        ),
      'every instance owning a partition',
      10_000,
    );
  const successes = (seen: Array<Step & { attempt: number }>) => seen.filter((s) => !(s.attempt === 1 && failsFirst(s))).length;

  async function publish(keys: number, perKey: number, exchange = suite.queue) {
    for (let seq = 0; seq < perKey; seq++) {
      for (let k = 0; k < keys; k++) {
        suite.broker.channel.publish(exchange, 'any', Buffer.from(JSON.stringify({ key: `k${k}`, seq })), {
          headers: { 'x-key': `k${k}` },
          contentType: 'application/json',
          persistent: true,
        });
      }
    }
    await (suite.broker.channel as unknown as { waitForConfirms(): Promise<void> }).waitForConfirms();
  }

  it('spreads the partitions over two instances, keeps each key in order through retries (hold), loses nothing', async () => {
    const run = partitionedHandler({ count: 4 });
    const A = run.make('a');
    const B = run.make('b');
    suite.apps.push(await startApp([A], TEST_OPTIONS), await startApp([B], TEST_OPTIONS));
    await untilEveryAppOwnsAPartition();
    // A partition moves once its first owner has let it go: the second instance may consume one before the other.
    const consumedBy = () =>
      suite.apps.map(
        (app) =>
          app
            .get(RetryEngine)
            .partitions()[0]
            .partitions.filter((p) => p.consuming).length,
      );
    await waitFor(() => consumedBy().join() === '2,2', 'two partitions consumed by each instance', 10_000);
    const [a, b] = suite.apps.map((app) => app.get(RetryEngine).partitions()[0]);
    expect(a.partitions.map((p) => p.owner)).toEqual(b.partitions.map((p) => p.owner)); // the same view
    expect(a.partitions.map((p) => p.mine)).toEqual(b.partitions.map((p) => !p.mine));
    // Depths and consumers as the broker says, each heartbeat: one active consumer per partition, none waiting.
    await waitFor(
      () =>
        suite.apps[0]
          .get(RetryEngine)
          .partitions()[0]
          .partitions.every((p) => p.consumers === 1 && p.depth === 0),
      'depths read',
      5_000,
    );

    await publish(40, 20);
    await waitFor(() => successes(run.seen) >= 800, 'every message handled', 30_000);
    expect(run.overlap()).toBe(0);
    expect(violations(run.seen, 20)).toEqual({ outOfOrder: 0, missing: 0 });
    const byApp = new Set(run.seen.map((s) => s.app));
    expect(byApp).toEqual(new Set(['a', 'b']));
    for (let i = 0; i < 4; i++) expect(await suite.broker.consumers(`${suite.queue}.p${i}`)).toBeGreaterThanOrEqual(1);
  });

  it("hands a stopping instance's partitions to the other at once, between messages", async () => {
    const run = partitionedHandler({ count: 4 });
    suite.apps.push(await startApp([run.make('a')], TEST_OPTIONS), await startApp([run.make('b')], TEST_OPTIONS));
    await untilEveryAppOwnsAPartition();
    await publish(20, 30);
    await waitFor(() => run.seen.length > 100, 'a first part handled', 20_000);
    const stopping = suite.apps.shift() as INestApplicationContext;
    const stoppedAt = Date.now();
    const survivor = suite.apps[0].get(RetryEngine);
    const closing = stopping.close().then(() => Date.now());
    // It announces its leaving first: the survivor subscribes at once (no wait for missed heartbeats), and becomes the
    // active consumer of each partition once the leaver has finished what it runs there (holds included).
    const takenAt = await waitFor(() => survivor.partitions()[0].partitions.every((p) => p.consuming) && Date.now(), 'the survivor owns all', 5_000);
    expect(takenAt - stoppedAt).toBeLessThan(1_000);
    expect((await closing) - stoppedAt).toBeLessThan(200 + 1_000 + 2_000); // tier delay + holdGrace + margin
    await waitFor(() => successes(run.seen) === 600, 'every message handled', 30_000);
    expect(run.overlap()).toBe(0);
    expect(violations(run.seen, 30)).toEqual({ outOfOrder: 0, missing: 0 });
  });

  it("takes a leaving member's partitions at once while one of its own hand-overs still waits for a slow handler", async () => {
    suite.uses(2);
    let running = 0;
    let done = 0;
    let calls = 0;
    // It honours its signal: a hand-over must leave that alone, or the call ends early and the message runs again.
    const Slow = handlerFor(
      { queue: suite.queue, prefetch: 5, partitions: { count: 2, key: { header: 'x-key' }, heartbeat: '200ms' } },
      async (_p, ctx) => {
        calls++;
        running++;
        try {
          await new Promise<void>((resolve, reject) => {
            const timer = setTimeout(resolve, 4_000);
            ctx.signal.addEventListener('abort', () => (clearTimeout(timer), reject(ctx.signal.reason)), { once: true });
          });
        } finally {
          running--;
        }
        done++;
      },
    );
    const consuming = (app: INestApplicationContext) =>
      app
        .get(RetryEngine)
        .partitions()[0]
        .partitions.filter((p) => p.consuming).length;
    suite.apps.push(await startApp([Slow], TEST_OPTIONS));
    const [a] = suite.apps;
    await waitFor(() => consuming(a) === 2, 'the first instance owns both', 5_000);
    await publish(20, 1); // a slow call in flight on each partition
    await waitFor(() => running >= 2, 'slow calls on both partitions', 5_000);
    // A second instance: the first hands one partition over, and that waits for the slow calls running there.
    suite.apps.push(await startApp([Slow], TEST_OPTIONS));
    await waitFor(() => consuming(a) === 1, 'one partition being handed over', 5_000);
    // The second leaves while the hand-over still waits: the first takes the partition back at once, not after it.
    const leftAt = Date.now();
    await suite.apps.pop()!.close();
    const takenAt = await waitFor(() => consuming(a) === 2 && Date.now(), 'both partitions consumed again', 10_000);
    expect(takenAt - leftAt).toBeLessThan(1_500);
    expect(running).toBeGreaterThan(0); // the slow calls of the hand-over still run
    await waitFor(() => done === 20, 'every message handled', 30_000);
    for (let i = 0; i < 2; i++) expect(await suite.broker.count(`${suite.queue}.p${i}`)).toBe(0);
    expect(calls).toBe(20); // each once: no call of the hand-over was cut short
  });

  it('after a smaller count, moves what the partitions beyond it hold into the new ones', async () => {
    suite.uses(4);
    // Four partitions declared by a first start, then filled while nobody consumes.
    const first = handlerFor({ queue: suite.queue, partitions: { count: 4, key: { header: 'x-key' } } }, () => undefined);
    const app = await startApp([first], TEST_OPTIONS);
    await app.get(RetryEngine).stopConsuming();
    await publish(40, 5);
    const beyond = (await suite.broker.count(`${suite.queue}.p2`))! + (await suite.broker.count(`${suite.queue}.p3`))!;
    expect(beyond).toBeGreaterThan(0);
    await app.close();

    const run = partitionedHandler({ count: 2 });
    const A = run.make('a');
    suite.apps.push(await startApp([A], TEST_OPTIONS));
    await waitFor(() => successes(run.seen) >= 200, 'every message handled, moved ones too', 20_000);
    expect(await suite.broker.count(`${suite.queue}.p2`)).toBe(0);
    expect(await suite.broker.count(`${suite.queue}.p3`)).toBe(0);
    expect(successes(run.seen)).toBe(200);
  });

  it('cuts a retired partition off again when an instance of the earlier count binds it back, so moved messages do not go round', async () => {
    suite.uses(4);
    const first = handlerFor({ queue: suite.queue, partitions: { count: 4, key: { header: 'x-key' } } }, () => undefined);
    await (await startApp([first], TEST_OPTIONS)).close();
    const run = partitionedHandler({ count: 2 });
    suite.apps.push(await startApp([run.make('a')], TEST_OPTIONS));
    await untilEveryAppOwnsAPartition();
    // What an instance still running count 4 does when it reconnects: it binds its partitions to the hash exchange again.
    for (const retired of [`${suite.queue}.p2`, `${suite.queue}.p3`]) await suite.broker.channel.bindQueue(retired, suite.queue, '1');
    await publish(40, 5);
    await waitFor(
      () => successes(run.seen) >= 200,
      'every message handled, none going round between the hash exchange and a retired partition',
      20_000,
    );
    expect(await suite.broker.count(`${suite.queue}.p2`)).toBe(0);
    expect(await suite.broker.count(`${suite.queue}.p3`)).toBe(0);
    expect(successes(run.seen)).toBe(200);
  });

  it('runs on quorum partition queues as well: in order, nothing lost, every partition with one consumer', async () => {
    const run = partitionedHandler({ count: 2, queueType: 'quorum' });
    suite.apps.push(await startApp([run.make('a')], TEST_OPTIONS), await startApp([run.make('b')], TEST_OPTIONS));
    await untilEveryAppOwnsAPartition();
    await publish(100, 5);
    await waitFor(() => successes(run.seen) >= 500, 'every message handled', 30_000);
    expect(run.overlap()).toBe(0);
    expect(violations(run.seen, 5)).toEqual({ outOfOrder: 0, missing: 0 });
    for (let i = 0; i < 2; i++) expect(await suite.broker.consumers(`${suite.queue}.p${i}`)).toBe(1);
  });

  it('observes each attempt a hold retries in place as an attempt through a tier: failed and retried, then handled, a span each', async () => {
    suite.uses(1);
    const registry = new Registry();
    const started: number[] = [];
    const observer: RetryObserver = { deliveryStarted: (e) => void started.push(e.attempt) };
    const Handler = handlerFor(
      {
        queue: suite.queue,
        delays: ['200ms'],
        maxAttempts: 3,
        partitions: { count: 1, key: { header: 'x-key' }, whileRetrying: 'hold', heartbeat: '200ms' },
      },
      (_payload, ctx) => {
        if (ctx.attempt === 1) throw new Error('the first attempt fails');
      },
    );
    const tracing = installTracing();
    try {
      suite.apps.push(await startApp([Handler], { ...TEST_OPTIONS, metrics: { registry }, observers: [observer], tracing: true }));
      await waitFor(() => suite.apps[0].get(RetryEngine).partitions()[0].partitions[0].consuming, 'the partition taken', 5_000);
      await suite.broker.publish(suite.queue, '', { key: 'k', seq: 1 }, { headers: { 'x-key': 'k' } });
      const queue = `${suite.queue}.p0`;
      const value = async (name: string, labels: Record<string, string> = {}) => {
        const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
        const values = (metric?.values ?? []) as Array<{ value: number; labels: Record<string, string | number> }>;
        return values.find((v) => v.labels.queue === queue && Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l))?.value;
      };
      await waitFor(async () => (await value('amqp_retry_deliveries_handled_total')) === 1, 'the second attempt handled', 10_000);
      expect({
        failed: await value('amqp_retry_deliveries_failed_total'),
        retried: await value('amqp_retry_deliveries_retried_total', { tier: '1' }),
        inFlight: await value('amqp_retry_handlers_in_flight'),
        started,
      }).toEqual({ failed: 1, retried: 1, inFlight: 0, started: [1, 2] });
      // A consumer span per attempt, each with its number, the failed one with an error status.
      const consumers = tracing.spans().filter((s) => s.kind === SpanKind.CONSUMER);
      expect(consumers.map((s) => [s.attributes['amqp_retry.attempt'], s.status.code])).toEqual([
        [1, SpanStatusCode.ERROR],
        [2, SpanStatusCode.UNSET],
      ]);
    } finally {
      await tracing.uninstall();
    }
  });

  it("'continue' retries through the tiers: the key's later messages run meanwhile and the retried one after them", async () => {
    suite.uses(1);
    const order: string[] = [];
    const Handler = handlerFor(
      { queue: suite.queue, delays: ['200ms'], maxAttempts: 3, partitions: { count: 1, key: { header: 'x-key' }, heartbeat: '200ms' } },
      (payload, ctx) => {
        const { seq } = payload as Step;
        order.push(`${seq}.${ctx.attempt}`);
        if (seq === 3 && ctx.attempt === 1) throw new Error('seq 3 fails once');
      },
    );
    suite.apps.push(await startApp([Handler], TEST_OPTIONS));
    await waitFor(() => suite.apps[0].get(RetryEngine).partitions()[0].partitions[0].consuming, 'the partition taken', 5_000);
    for (const seq of [1, 2, 3, 4, 5]) await suite.broker.publish(suite.queue, '', { key: 'k', seq }, { headers: { 'x-key': 'k' } });
    await waitFor(() => order.length === 6, 'six calls', 10_000);
    expect(order).toEqual(['1.1', '2.1', '3.1', '4.1', '5.1', '3.2']);
    expect(await suite.broker.count(`${suite.queue}.p0.error`)).toBe(0);
    // No pause and no breaker on partitions (docs/outage-protection.md): refused clearly, and the page lists none.
    const engine = suite.apps[0].get(RetryEngine);
    expect(() => engine.pause(suite.queue, { by: 'alice' })).toThrow(`"${suite.queue}" is partitioned, and partitioned handlers cannot be paused`);
    expect(() => engine.pause(`${suite.queue}.p0`, { by: 'alice' })).toThrow(`"${suite.queue}.p0" is a partition of "${suite.queue}"`);
    expect(engine.queueStates()).toEqual([]);
    expect(engine.activity().find((q) => q.queue === `${suite.queue}.p0`)).toMatchObject({ inFlight: 0 });
    expect(engine.activity().find((q) => q.queue === `${suite.queue}.p0`)).not.toHaveProperty('state');
  });

  it("recognises a handled message in any partition: idempotency keys are the handler queue's, not the partition's", async () => {
    suite.uses(2);
    const space = uniqueSpace();
    const calls: string[] = [];
    const Handler = handlerFor(
      { queue: suite.queue, delays: ['200ms'], partitions: { count: 2, key: { header: 'x-key' }, heartbeat: '200ms' } },
      (_payload, ctx) => void calls.push(ctx.queue),
    );
    const app = await startApp([Handler], { ...TEST_OPTIONS, idempotency: { store: redisKind.create(space) } });
    suite.apps.push(app);
    try {
      await waitFor(
        () =>
          app
            .get(RetryEngine)
            .partitions()[0]
            .partitions.every((p) => p.consuming),
        'both partitions taken',
        5_000,
      );
      await suite.broker.publish(suite.queue, '', { n: 1 }, { messageId: 'moved-1', headers: { 'x-key': 'k1' } });
      await waitFor(() => calls.length === 1, 'the first call', 5_000);
      // The same message reaches the other partition (as after a change of count): it was handled, so it is acked uncalled.
      const other = calls[0] === `${suite.queue}.p0` ? `${suite.queue}.p1` : `${suite.queue}.p0`;
      await suite.broker.publish('', other, { n: 1 }, { messageId: 'moved-1', headers: { 'x-key': 'k1' } });
      await suite.broker.publish('', other, { n: 2 }, { messageId: 'after-1', headers: { 'x-key': 'k1' } });
      await waitFor(() => calls.length === 2, 'the next message handled', 5_000);
      await waitFor(async () => (await suite.broker.count(other)) === 0, 'the copy acked', 5_000);
      expect(calls).toEqual([calls[0], other]);
      expect(await redisKind.holds(space, storeKeyOf(suite.queue, 'moved-1'))).toBe(true);
    } finally {
      await redisKind.cleanUp(space);
    }
  });

  it('fails clearly, naming the command, where the broker lacks the exchange type', async () => {
    const probe = { urls: [AMQP_URL], connectTimeoutMs: 5_000, queue: suite.queue, exchange: uniqueName('e2e.parts.none'), arguments: {} };
    const failure = await declareHashExchange({ ...probe, type: 'x-amqp-retry-no-such-type' }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PartitionsPluginError);
    expect((failure as Error).message).toContain('rabbitmq-plugins enable rabbitmq_consistent_hash_exchange');
    expect((failure as Error).message).toContain(`"${suite.queue}" is partitioned`);
  });
});
