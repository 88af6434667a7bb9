import { RetryEngine, TopologyMismatchError, type RetryContext } from 'nestjs-amqp-retry';
import { createApp, handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import amqp from 'amqplib';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

type Step = { key: string; seq: number };

describe('ordering by key on a real broker', () => {
  const suite = useSuite('e2e.order');

  /** Key "k" gets seq 1..5, seq 3 failing on its first attempt; key "other" one message after them. */
  async function run(whileRetrying: 'continue' | 'hold') {
    const running = new Map<string, number>();
    let overlap = 0;
    const Handler = handlerFor(
      {
        queue: suite.queue,
        prefetch: 10,
        delays: ['300ms'],
        maxAttempts: 3,
        ordering: { key: (p) => (p as Step).key, whileRetrying, holdGrace: '5s' },
      },
      async (payload, ctx) => {
        const { key, seq } = payload as Step;
        running.set(key, (running.get(key) ?? 0) + 1);
        if (running.get(key)! > 1) overlap++;
        await new Promise((resolve) => setTimeout(resolve, 20));
        running.set(key, running.get(key)! - 1);
        if (seq === 3 && ctx.attempt === 1) throw new Error('seq 3 fails once');
      },
    );
    suite.app = await startApp([Handler], TEST_OPTIONS);
    for (const seq of [1, 2, 3, 4, 5]) await suite.broker.publish('', suite.queue, { key: 'k', seq }, { messageId: `k-${seq}` });
    await suite.broker.publish('', suite.queue, { key: 'other', seq: 1 }, { messageId: 'other-1' });
    const handler = handlerOf(suite.app, Handler);
    await waitFor(() => handler.calls.length === 7, 'seven calls', 10_000);
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'every message acked');
    const steps = handler.calls.map((c) => ({ ...(c.payload as Step), attempt: c.attempt, at: c.at }));
    return { steps, overlap, k: steps.filter((s) => s.key === 'k').map((s) => `${s.seq}.${s.attempt}`) };
  }

  it("'continue': one at a time per key; the key's later messages run while seq 3 waits in its tier, so it ends last", async () => {
    const { k, overlap } = await run('continue');
    expect(overlap).toBe(0);
    expect(k).toEqual(['1.1', '2.1', '3.1', '4.1', '5.1', '3.2']);
  });

  it("'hold': the key's later messages wait until the retry of seq 3 settles; other keys go on meanwhile", async () => {
    const { k, overlap, steps } = await run('hold');
    expect(overlap).toBe(0);
    expect(k).toEqual(['1.1', '2.1', '3.1', '3.2', '4.1', '5.1']);
    const other = steps.find((s) => s.key === 'other')!;
    const retry = steps.find((s) => s.seq === 3 && s.attempt === 2)!;
    const failure = steps.find((s) => s.seq === 3 && s.attempt === 1)!;
    expect(other.at).toBeLessThan(retry.at); // not blocked by k's hold
    expect(retry.at - failure.at).toBeGreaterThanOrEqual(290); // the tier delay, waited by seq 4 and 5 too
  });

  it("'hold' after a timeout: the retry, then the key's later messages, wait for the abandoned call; never two calls of the key at once", async () => {
    const events: string[] = [];
    let running = 0;
    let maxRunning = 0;
    const Handler = handlerFor(
      {
        queue: suite.queue,
        prefetch: 10,
        timeout: '400ms',
        delays: ['100ms'],
        maxAttempts: 3,
        ordering: { key: (p) => (p as Step).key, whileRetrying: 'hold', holdGrace: '5s' },
      },
      async (payload, ctx) => {
        const name = `${(payload as Step).seq}.${ctx.attempt}`;
        maxRunning = Math.max(maxRunning, ++running);
        events.push(`start ${name}`);
        // Seq 1's first attempt ignores its signal and runs on past its timeout (within one more timeout).
        await new Promise((resolve) => setTimeout(resolve, name === '1.1' ? 700 : 10));
        events.push(`end ${name}`);
        running--;
      },
    );
    suite.app = await startApp([Handler], TEST_OPTIONS);
    for (const seq of [1, 2, 3]) await suite.broker.publish('', suite.queue, { key: 'k', seq }, { messageId: `k-${seq}` });
    const handler = handlerOf(suite.app, Handler);
    await waitFor(() => events.length === 8, 'four calls to end', 10_000);
    expect(events).toEqual(['start 1.1', 'end 1.1', 'start 1.2', 'end 1.2', 'start 2.1', 'end 2.1', 'start 3.1', 'end 3.1']);
    expect(maxRunning).toBe(1);
    expect(handler.calls[1].at - handler.calls[0].at).toBeGreaterThanOrEqual(690); // the retry waited for the call
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'every message acked');
  });

  it("'hold': a message parked while held lets the key move on", async () => {
    const Handler = handlerFor(
      { queue: suite.queue, prefetch: 10, delays: ['200ms'], maxAttempts: 2, ordering: { key: { header: 'x-key' }, whileRetrying: 'hold' } },
      (payload) => {
        if ((payload as Step).seq === 1) throw new Error('seq 1 always fails');
      },
    );
    suite.app = await startApp([Handler], TEST_OPTIONS);
    for (const seq of [1, 2]) await suite.broker.publish('', suite.queue, { key: 'k', seq }, { messageId: `k-${seq}`, headers: { 'x-key': 'k' } });
    const handler = handlerOf(suite.app, Handler);
    await waitFor(() => handler.calls.length === 3, 'three calls', 10_000);
    expect(handler.calls.map((c) => `${(c.payload as Step).seq}.${c.attempt}`)).toEqual(['1.1', '1.2', '2.1']);
    expect((await suite.broker.take(`${suite.queue}.error`, 1))[0].properties.headers?.['x-parked-reason']).toBe('exhausted');
  });

  it("'hold' keeps order for messages without a message id: exactly 1..8, the retried one back in its place without a stall", async () => {
    const Handler = handlerFor(
      {
        queue: suite.queue,
        prefetch: 20,
        delays: ['300ms'],
        maxAttempts: 3,
        ordering: { key: (p) => (p as Step).key, whileRetrying: 'hold', holdGrace: '5s' },
      },
      (payload, ctx) => {
        if ((payload as Step).seq === 3 && ctx.attempt === 1) throw new Error('seq 3 fails once');
      },
    );
    suite.app = await startApp([Handler], TEST_OPTIONS);
    // No messageId: the held message is known by what survives the tiers (its body, properties and first route).
    for (let seq = 1; seq <= 8; seq++) await suite.broker.publish('', suite.queue, { key: 'k', seq });
    const handler = handlerOf(suite.app, Handler);
    await waitFor(() => handler.calls.length === 9, 'nine calls', 15_000);
    expect(handler.calls.every((c) => c.properties.messageId === undefined)).toBe(true);
    const order = handler.calls.map((c) => `${(c.payload as Step).seq}.${c.attempt}`);
    expect(order).toEqual(['1.1', '2.1', '3.1', '3.2', '4.1', '5.1', '6.1', '7.1', '8.1']);
    const failed = handler.calls[2].at;
    const next = handler.calls[4].at;
    // The tier's 300 ms, not the 5 s holdGrace of a hold whose copy was never recognised.
    expect(next - failed).toBeGreaterThanOrEqual(290);
    expect(next - failed).toBeLessThan(2_000);
  });

  it("'hold' without message ids tells a fresh duplicate from the retried copy: the duplicate waits its turn", async () => {
    let failures = 0;
    const Handler = handlerFor(
      {
        queue: suite.queue,
        prefetch: 20,
        delays: ['300ms'],
        maxAttempts: 3,
        ordering: { key: (p) => (p as Step).key, whileRetrying: 'hold', holdGrace: '5s' },
      },
      (payload, ctx) => {
        if ((payload as Step).seq === 2 && ctx.attempt === 1 && failures++ === 0) throw new Error('the first copy of seq 2 fails once');
      },
    );
    suite.app = await startApp([Handler], TEST_OPTIONS);
    // Seq 2 is published twice, byte for byte: the second is a new message, not the first's retry.
    for (const seq of [1, 2, 2, 3]) await suite.broker.publish('', suite.queue, { key: 'k', seq });
    const handler = handlerOf(suite.app, Handler);
    await waitFor(() => handler.calls.length === 5, 'five calls', 15_000);
    expect(handler.calls.map((c) => `${(c.payload as Step).seq}.${c.attempt}`)).toEqual(['1.1', '2.1', '2.2', '2.1', '3.1']);
  });

  it('singleActiveConsumer declares x-single-active-consumer; turning it on for an existing queue fails the start with a 406 named', async () => {
    const Handler = handlerFor({ queue: suite.queue, delays: [100], singleActiveConsumer: true }, () => undefined);
    suite.app = await startApp([Handler], TEST_OPTIONS);
    await suite.app.close();
    suite.app = undefined;
    // The queue has the argument: declaring it with the same arguments passes, without them fails.
    await suite.broker.channel.assertQueue(suite.queue, {
      durable: true,
      arguments: { 'x-dead-letter-exchange': `${suite.queue}.dlx`, 'x-single-active-consumer': true },
    });

    const other = uniqueName('e2e.order');
    const Before = handlerFor({ queue: other, delays: [100] }, () => undefined);
    await (await startApp([Before], TEST_OPTIONS)).close(); // an earlier version, without it
    const Late = handlerFor({ queue: other, delays: [100], singleActiveConsumer: true }, () => undefined);
    const late = await createApp([Late], TEST_OPTIONS);
    try {
      const error: unknown = await late.init().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TopologyMismatchError);
      expect(String(error)).toContain(`The queue "${other}" already exists on the broker with different arguments`);
      expect(String(error)).toContain('x-single-active-consumer');
    } finally {
      await late.close().catch(() => undefined);
      await suite.broker.deleteRetryTopology(other);
    }
  });

  it('singleActiveConsumer: a pause mid-handler hands the queue over only once that handler is done; every message once, in order', async () => {
    const log: string[] = [];
    let releaseFirst!: () => void;
    const firstMayEnd = new Promise<void>((resolve) => (releaseFirst = resolve));
    const behaviour = (instance: number) => async (payload: unknown, ctx: RetryContext) => {
      const { seq } = payload as Step;
      log.push(`start ${instance}:${seq}`);
      if (instance === 1 && seq === 1) await firstMayEnd;
      log.push(`end ${instance}:${seq}${ctx.signal.aborted ? ' (its signal aborted)' : ''}`);
    };
    const options = {
      queue: suite.queue,
      prefetch: 10,
      delays: [100],
      singleActiveConsumer: true,
      ordering: { key: (p: unknown) => (p as Step).key },
    };
    const First = handlerFor(options, behaviour(1));
    suite.app = await startApp([First], TEST_OPTIONS); // subscribed first: the active consumer
    const Second = handlerFor(options, behaviour(2));
    suite.apps.push(await startApp([Second], TEST_OPTIONS));
    for (const seq of [1, 2, 3, 4, 5]) await suite.broker.publish('', suite.queue, { key: 'k', seq });
    await waitFor(() => log.includes('start 1:1'), 'the first message running on the first instance');
    suite.app.get(RetryEngine).pause(suite.queue, { by: 'test' });
    // Were the queue handed over now, the second instance would start the key's next message while 1 still runs.
    await waitFor(() => log.some((line) => line.startsWith('start 2:')), 'the second instance starting early', 1_500).catch(() => undefined);
    releaseFirst();
    await waitFor(() => log.filter((line) => line.startsWith('end')).length === 5, 'five messages handled', 10_000);
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'every message acked');
    expect(log).toEqual(['start 1:1', 'end 1:1', 'start 2:2', 'end 2:2', 'start 2:3', 'end 2:3', 'start 2:4', 'end 2:4', 'start 2:5', 'end 2:5']);
  });
});

/**
 * A quorum queue under `'hold'`, several instances without single active consumer: another instance's lost channel
 * gives its messages back counted as delivered, suspects of a crash, which run alone. A message waiting behind the
 * hold runs no handler, so they run beside it: nothing waits for the tier (docs/idempotency-and-ordering.md).
 */
describe('ordering under a hold on a quorum queue, beside crash suspects of another instance', () => {
  const suite = useSuite('e2e.order.hold-suspect');

  it("runs the suspects and new keys within moments, not after the hold; the key's retry still runs before its next message", async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor(
      {
        queue,
        queueType: 'quorum',
        prefetch: 10,
        delays: ['5s'],
        maxAttempts: 3,
        ordering: { key: (p) => (p as { key: string }).key, whileRetrying: 'hold' },
      },
      (payload, context) => {
        if ((payload as { id: string }).id === 'M1' && context.attempt === 1) throw new Error('M1 fails once');
      },
    );
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    const calls = handlerOf(app, Handler).calls;
    const id = (c: { payload: unknown }) => (c.payload as { id: string }).id;
    const publish = (msg: string, key: string) => broker.publish('', queue, { id: msg, key }, { messageId: msg });
    await publish('M1', 'K');
    await waitFor(() => calls.some((c) => id(c) === 'M1'), 'M1 failed');
    await publish('M2', 'K'); // waits behind M1's hold for 5 s
    // Another instance takes some messages and loses its channel.
    const other = await amqp.connect(AMQP_URL);
    suite.afterThis(() => other.close().catch(() => undefined));
    const channel = await other.createChannel();
    await channel.prefetch(5);
    const taken: string[] = [];
    await channel.consume(queue, (m) => void (m && taken.push(String(m.properties.messageId))), { noAck: false });
    // The broker shares the S messages out between the two consumers: publish until the other holds two.
    for (let i = 0; i < 20 && taken.length < 2; i++) {
      await publish(`S${i}`, `s${i}`);
      await waitFor(() => taken.includes(`S${i}`) || calls.some((c) => id(c) === `S${i}`), `S${i} taken by one of the consumers`);
    }
    expect(taken.length).toBe(2);
    await channel.close();
    const lost = Date.now();
    await publish('N1', 'n1'); // a new key, delivered behind the suspects
    await waitFor(() => taken.every((t) => calls.some((c) => id(c) === t && c.redelivered)), 'the suspects handled', 20_000);
    await waitFor(() => calls.some((c) => id(c) === 'N1'), 'the new key handled', 20_000);
    const suspectsAfter = Math.max(...calls.filter((c) => c.redelivered).map((c) => c.at - lost));
    const newKeyAfter = calls.find((c) => id(c) === 'N1')!.at - lost;
    // Within moments, not after the hold (the tier's 5 s plus holdGrace's 10 s).
    expect(suspectsAfter).toBeLessThan(2_000);
    expect(newKeyAfter).toBeLessThan(2_000);
    await waitFor(() => calls.some((c) => id(c) === 'M2'), 'M2 handled', 20_000);
    expect(calls.filter((c) => (c.payload as { key: string }).key === 'K').map((c) => `${id(c)}.${c.attempt}`)).toEqual(['M1.1', 'M1.2', 'M2.1']);
  });
});
