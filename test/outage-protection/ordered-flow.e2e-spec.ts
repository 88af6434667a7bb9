import { RetryEngine, type QueueStateEvent, type RetryObserver } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { settleWindow, useSuite } from '../support/suite.js';
import { RecordingLogger } from '../support/recording-logger.js';

type Step = { key: string; seq: number };

/**
 * Ordered deliveries (one ordering key, prefetch 20, a slow handler) under a pause and an open circuit: the deliveries
 * waiting for their key's turn go back to the broker with the rest, and come back in their order.
 */
describe.each(['classic', 'quorum'] as const)('ordered deliveries of a stopped %s queue', (queueType) => {
  const suite = useSuite(`e2e.ordered-flow.${queueType}`);
  const N = 30;

  const publishKeyed = async (n: number) => {
    for (let seq = 1; seq <= n; seq++) await suite.broker.publish('', suite.queue, { key: 'k', seq }, { messageId: `k-${seq}` });
  };

  it('paused: none of the deliveries waiting for their key reaches the handler; they wait in the broker and run in order after the resume', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor(
      { queue, queueType, prefetch: 20, delays: ['1s'], ordering: { key: (p) => (p as Step).key } },
      () => new Promise((resolve) => setTimeout(resolve, 400)),
    );
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    const engine = app.get(RetryEngine);
    const calls = handlerOf(app, Handler).calls;
    const inFlight = () => engine.activity().find((q) => q.queue === queue)?.inFlight ?? 0;
    await publishKeyed(N);
    await waitFor(() => calls.length >= 2 && inFlight() === 20, 'the prefetch full: one running, the rest waiting for the key');

    engine.pause(queue, { by: 'ops' });
    const atPause = calls.length;
    // The call running at the pause finishes and is acked; every other delivery is back in the broker at once.
    await waitFor(async () => inFlight() === 0 && (await broker.count(queue)) === N - atPause, 'everything not handled back in the broker', 5_000);
    await settleWindow(1_500); // more than three handler times: a waiting delivery let through would show here
    expect(calls.length).toBe(atPause);
    expect(await broker.count(queue)).toBe(N - atPause);

    engine.resume(queue, { by: 'ops' });
    await waitFor(() => calls.length === N, 'every message handled after the resume', 30_000);
    await waitFor(async () => (await broker.count(queue)) === 0, 'an empty queue');
    expect(calls.map((c) => (c.payload as Step).seq)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });

  it('open: after the circuit opens, no delivery waiting for its key calls the dependency before the half-open trial', async () => {
    const { broker, queue } = suite;
    let down = true;
    const changes: Array<{ to: string; calls: number }> = [];
    let callsSoFar = () => 0;
    const observer: RetryObserver = { queueStateChanged: (e: QueueStateEvent) => changes.push({ to: e.to, calls: callsSoFar() }) };
    const Handler = handlerFor(
      {
        queue,
        queueType,
        prefetch: 20,
        delays: ['20s'],
        maxAttempts: 5,
        ordering: { key: (p) => (p as Step).key },
        circuitBreaker: { consecutiveFailures: 3, openFor: '3s' },
      },
      () => new Promise((resolve, reject) => setTimeout(() => (down ? reject(new Error('dependency down')) : resolve(undefined)), 400)),
    );
    const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, observers: [observer] }));
    const calls = handlerOf(app, Handler).calls;
    callsSoFar = () => calls.length;
    await publishKeyed(N);
    await waitFor(() => changes.some((c) => c.to === 'open'), 'the circuit open', 10_000);
    const opened = changes.find((c) => c.to === 'open')!;
    expect(opened.calls).toBe(3);
    // Three failed (in their tier now); the other 27 are back in the queue at once, none of them called.
    await waitFor(async () => (await broker.count(queue)) === N - 3, 'the deliveries not handled back in the broker', 2_000);
    down = false;
    await waitFor(() => changes.some((c) => c.to === 'half-open'), 'the half-open trial', 10_000);
    expect(changes.find((c) => c.to === 'half-open')!.calls).toBe(3);
    await waitFor(() => changes.some((c) => c.to === 'running'), 'closed again after the trial', 10_000);
    // The 27 that were put back run in their order.
    await waitFor(() => calls.length >= 3 + N - 3, 'the others handled', 30_000);
    expect(calls.slice(3, N).map((c) => (c.payload as Step).seq)).toEqual(Array.from({ length: N - 3 }, (_, i) => i + 4));
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });
});

/**
 * A classic queue: on a quorum queue, a message the queue counts as returned more often than this process returned it
 * on purpose is a suspect (see QueueConsumer), handled alone at prefetch 1, and behind a hold it waits for the hold to
 * end (docs/idempotency-and-ordering.md).
 */
describe('ordered deliveries of a stopped classic queue under a hold', () => {
  const suite = useSuite('e2e.ordered-flow.hold');

  const publishKeyed = async (n: number) => {
    for (let seq = 1; seq <= n; seq++) await suite.broker.publish('', suite.queue, { key: 'k', seq }, { messageId: `k-${seq}` });
  };

  it("'hold': a pause while the key waits for a retry gives the waiting messages back; after the resume the retry still runs first", async () => {
    const { broker, queue } = suite;
    const n = 10;
    const Handler = handlerFor(
      { queue, prefetch: 20, delays: ['1s'], maxAttempts: 3, ordering: { key: (p) => (p as Step).key, whileRetrying: 'hold' } },
      (payload, context) => {
        if ((payload as Step).seq === 1 && context.attempt === 1) throw new Error('seq 1 fails once');
      },
    );
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    const engine = app.get(RetryEngine);
    const calls = handlerOf(app, Handler).calls;
    const inFlight = () => engine.activity().find((q) => q.queue === queue)?.inFlight ?? 0;
    await publishKeyed(n);
    await waitFor(() => calls.length === 1 && inFlight() === n - 1, 'seq 1 failed; the others wait behind its hold');
    engine.pause(queue, { by: 'ops' });
    await waitFor(async () => inFlight() === 0 && (await broker.count(queue)) === n - 1, 'the waiting messages back in the broker', 5_000);
    // The retry comes back from its tier into the stopped queue, behind them.
    await waitFor(async () => (await broker.count(queue)) === n, 'the retry back in the queue', 5_000);
    engine.resume(queue, { by: 'ops' });
    await waitFor(() => calls.length === n + 1, 'every message handled after the resume', 15_000);
    expect(calls.map((c) => `${(c.payload as Step).seq}.${c.attempt}`)).toEqual([
      '1.1',
      '1.2',
      ...Array.from({ length: n - 1 }, (_, i) => `${i + 2}.1`),
    ]);
  });
});

/**
 * A half-open circuit takes its trial calls at a prefetch of `halfOpenCalls`: a message waiting behind its key's hold
 * holds that place (and its trial's ticket), so the retried copy it waits for cannot be delivered.
 */
describe('ordered deliveries under a hold while the circuit is half-open', () => {
  const suite = useSuite('e2e.ordered-flow.half-open');

  it("'hold' at one trial call: the key's next message does not wait out the hold in the only place; it runs at once", async () => {
    const { broker, queue } = suite;
    const changes: string[] = [];
    const observer: RetryObserver = { queueStateChanged: (e: QueueStateEvent) => changes.push(e.to) };
    const Handler = handlerFor(
      {
        queue,
        prefetch: 20,
        delays: ['2s'],
        maxAttempts: 3,
        ordering: { key: (p) => (p as Partial<Step>).key, whileRetrying: 'hold', holdGrace: '4s' },
        // Only 'dependency down' is an outage: the keyed message's failure leaves the circuit half-open.
        circuitBreaker: {
          consecutiveFailures: 1,
          openFor: '500ms',
          halfOpenCalls: 1,
          countsAsFailure: (e) => (e as Error).message === 'dependency down',
        },
      },
      (payload, context) => {
        const { key, seq } = payload as Partial<Step>;
        if (key === undefined && context.attempt === 1) throw new Error('dependency down');
        if (seq === 1 && context.attempt === 1) throw new Error('seq 1 fails once');
      },
    );
    const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, observers: [observer] }));
    const logger = new RecordingLogger();
    app.useLogger(logger);
    const calls = handlerOf(app, Handler).calls;
    await broker.publish('', queue, { trigger: true }, { messageId: 'trigger' });
    await waitFor(() => changes.includes('half-open'), 'the circuit open, then half-open', 10_000);
    for (const seq of [1, 2]) await broker.publish('', queue, { key: 'k', seq }, { messageId: `k-${seq}` });
    await waitFor(() => calls.filter((c) => (c.payload as Step).seq === 2).length === 1, 'seq 2 handled', 15_000);
    const failed = calls.find((c) => (c.payload as Step).seq === 1)!;
    const next = calls.find((c) => (c.payload as Step).seq === 2)!;
    // Before seq 1's retry could come back (2 s): not after the hold's 6 s with the queue's one place taken.
    expect(next.at - failed.at).toBeLessThan(1_500);
    expect(logger.count(/ordering key "k" stops waiting .* would fill the prefetch of 1\)/)).toBe(1);
    // seq 2 was the trial that closed the circuit; the two retries come back after it.
    await waitFor(() => calls.length === 5, 'the two retries handled', 15_000);
    expect(changes).toEqual(['open', 'half-open', 'running']);
    const keyed = calls.filter((c) => (c.payload as Partial<Step>).key === 'k');
    expect(keyed.map((c) => `${(c.payload as Step).seq}.${c.attempt}`)).toEqual(['1.1', '2.1', '1.2']);
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });
});
