import type { INestApplicationContext } from '@nestjs/common';
import { RetryEngine, type CircuitBreakerOptions, type QueueStateEvent, type RetryObserver } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { cleanUp, useSuite } from '../support/suite.js';

type Item = { i: number; poison: boolean };

/** The error of a bad message: retryable, as far as the handler's policy knows, and thrown on every attempt. */
class BadRecordError extends Error {}

const MESSAGES = 150;
const PER_SECOND = 50;
const BREAKER: CircuitBreakerOptions = { failureRate: 0.5, minimumCalls: 20, window: '5s', openFor: '500ms', maxOpenFor: '2s' };

/**
 * A stream with a share of poison messages (they always throw a retryable error) through a handler with a circuit
 * breaker, while the dependency is up: the breaker must tell the messages that are bad from a dependency that is down,
 * so that the poison backlog is parked at the pace of its tiers, and good traffic behind it is not stalled.
 */
describe('circuit breaker and a backlog of poison messages', () => {
  const suite = useSuite('e2e.poison-backlog');

  /** Publishes the stream (40% poison, spread) at its rate, then one good message once the good ones are through. */
  async function runStream(queue: string, countsAsFailure?: (error: unknown) => boolean) {
    const transitions: string[] = [];
    const observer: RetryObserver = { queueStateChanged: (e: QueueStateEvent) => transitions.push(e.to) };
    const Handler = handlerFor(
      { queue, delays: ['100ms', '200ms', '300ms'], maxAttempts: 4, circuitBreaker: { ...BREAKER, ...(countsAsFailure && { countsAsFailure }) } },
      (payload) => {
        if ((payload as Item).poison) throw new BadRecordError(`record ${(payload as Item).i} is bad`);
      },
    );
    const app: INestApplicationContext = await startApp([Handler], { ...TEST_OPTIONS, observers: [observer] });
    try {
      const calls = handlerOf(app, Handler).calls;
      const good = () => calls.filter((c) => !(c.payload as Item).poison).length;
      const start = Date.now();
      let poison = 0;
      for (let i = 0; i < MESSAGES; i++) {
        const due = start + (i * 1_000) / PER_SECOND;
        if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now())); // the stream's pace
        const item: Item = { i, poison: i % 5 === 1 || i % 5 === 3 };
        if (item.poison) poison++;
        suite.broker.channel.sendToQueue(queue, Buffer.from(JSON.stringify(item)), { contentType: 'application/json', persistent: true });
      }
      await (suite.broker.channel as import('amqplib').ConfirmChannel).waitForConfirms();
      const goodCount = MESSAGES - poison;
      // Bounded well above the time the stream takes when the breaker ignores the bad error (a few seconds here).
      await waitFor(() => good() === goodCount, 'the good messages handled', 60_000);
      // One more good message, published while poison messages still cycle through their tiers.
      const lateAt = Date.now();
      await suite.broker.publish('', queue, { i: MESSAGES, poison: false });
      await waitFor(() => good() === goodCount + 1, 'the late good message handled', 60_000);
      const lateMs = calls.find((c) => (c.payload as Item).i === MESSAGES)!.at - lateAt;
      await waitFor(async () => (await suite.broker.count(`${queue}.error`)) === poison, 'every poison message parked', 120_000);
      const settledMs = Date.now() - start;
      const poisonCalls = calls.filter((c) => (c.payload as Item).poison).length;
      const opened = transitions.filter((t) => t === 'open').length;
      const state = app.get(RetryEngine).queueStates()[0].state;
      return { settledMs, lateMs, poison, poisonCalls, opened, state };
    } finally {
      await app.close();
    }
  }

  it('parks the poison backlog at the pace of its tiers: the stream settles within 3x the time it takes with countsAsFailure', async () => {
    const counted = uniqueName('e2e.poison-backlog.counted');
    try {
      // The reference: countsAsFailure tells the bad error apart, so the breaker never sees it.
      const reference = await runStream(counted, (error) => !(error instanceof BadRecordError));
      const breaker = await runStream(suite.queue);
      process.stdout.write(
        `poison backlog: with countsAsFailure settled in ${reference.settledMs} ms (late good message ${reference.lateMs} ms, opened ${reference.opened}x); ` +
          `breaker alone ${breaker.settledMs} ms (late good message ${breaker.lateMs} ms, opened ${breaker.opened}x)\n`,
      );
      for (const run of [reference, breaker]) {
        expect(run.poisonCalls).toBe(run.poison * 4); // every attempt, then parked
        expect(run.state).toBe('running');
      }
      expect(breaker.settledMs).toBeLessThanOrEqual(3 * reference.settledMs);
      expect(breaker.lateMs).toBeLessThan(2_000);
      expect(await suite.broker.count(suite.queue)).toBe(0);
    } finally {
      await cleanUp(() => suite.broker.deleteRetryTopology(counted));
    }
  }, 300_000);

  it('after an outage, half-open trials that meet retried poison messages do not keep the circuit open: it closes at the first half-open', async () => {
    const { broker, queue } = suite;
    let down = false;
    const transitions: Array<{ to: string; at: number; calls: number }> = [];
    let callsSoFar = () => 0;
    const observer: RetryObserver = {
      queueStateChanged: (e: QueueStateEvent) => transitions.push({ to: e.to, at: Date.now(), calls: callsSoFar() }),
    };
    const Handler = handlerFor(
      {
        queue,
        delays: ['200ms'],
        maxAttempts: 100,
        circuitBreaker: { failureRate: 1, minimumCalls: 1_000, consecutiveFailures: 10, openFor: '1s', maxOpenFor: '10s' },
      },
      (payload) => {
        if ((payload as Item).poison) throw new BadRecordError(`record ${(payload as Item).i} is bad`);
        if (down) throw new Error('dependency down');
      },
    );
    const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, observers: [observer] }));
    const calls = handlerOf(app, Handler).calls;
    callsSoFar = () => calls.length;
    const callsOf = (i: number) => calls.filter((c) => (c.payload as Item).i === i).length;
    // Five poison messages, each between good ones, cycle through their tier while the dependency is up.
    for (let i = 0; i < 10; i++) await broker.publish('', queue, { i, poison: i % 2 === 0 });
    await waitFor(() => [0, 2, 4, 6, 8].every((i) => callsOf(i) >= 3), 'every poison message retried twice', 10_000);
    expect(transitions).toEqual([]);
    // The dependency goes down: ten new messages fail on their first attempt and open the circuit; then it is back.
    down = true;
    for (let i = 100; i < 110; i++) await broker.publish('', queue, { i, poison: false });
    await waitFor(() => transitions.some((t) => t.to === 'open'), 'the circuit open', 10_000);
    down = false;
    const recovered = Date.now();
    // The queue holds the poison messages' retries and the ten good ones' retries; trials that take a poison message
    // give their place to the next message, and the first good one closes the circuit.
    await waitFor(() => transitions.some((t) => t.to === 'running'), 'the circuit closed again', 15_000);
    await waitFor(() => Array.from({ length: 10 }, (_, k) => 100 + k).every((i) => callsOf(i) === 2), 'the ten good messages handled', 10_000);
    expect(transitions.map((t) => t.to)).toEqual(['open', 'half-open', 'running']);
    // The trials: at least one retried poison message failed before a good message closed the circuit.
    const trials = calls.slice(transitions[1].calls, transitions[2].calls).map((c) => c.payload as Item);
    expect(trials.filter((t) => t.poison).length).toBeGreaterThanOrEqual(1);
    expect(trials[trials.length - 1].poison).toBe(false);
    expect(transitions[2].at - recovered).toBeLessThan(1_000 + 1_500); // openFor, then the first trials
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });
});
