import type { INestApplicationContext } from '@nestjs/common';
import { RetryEngine, type IdempotencyStore, type QueueStateEvent, type RetryObserver } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { settleWindow, SUITE_OPTIONS, useSuite } from '../support/suite.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/** Pause and resume (the kill switch), the circuit breaker's half-open trials, and the rate limit, on a real broker. */
describe('queue flow: pause, resume, circuit breaker, rate limit', () => {
  const suite = useSuite('e2e.flow-control');

  const publishMany = async (n: number) => {
    const { broker, queue } = suite;
    for (let i = 0; i < n; i++) broker.channel.sendToQueue(queue, Buffer.from(JSON.stringify({ i })), { contentType: 'application/json' });
    await (broker.channel as import('amqplib').ConfirmChannel).waitForConfirms();
  };

  it('pauses: the consumer is cancelled and messages wait in the broker; resume handles them; each change is one log line and one event', async () => {
    const { broker, queue } = suite;
    const events: QueueStateEvent[] = [];
    const observer: RetryObserver = { queueStateChanged: (e) => events.push(e) };
    const Handler = handlerFor({ queue, delays: ['1s'] }, () => undefined);
    const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, observers: [observer] }));
    const logger = new RecordingLogger();
    app.useLogger(logger);
    const engine = app.get(RetryEngine);

    const status = engine.pause(queue, { by: 'alice', reason: 'payments API down, INC-142' });
    expect(status).toMatchObject({ queue, state: 'paused', paused: { by: 'alice', reason: 'payments API down, INC-142' } });
    expect(Date.now() - Date.parse(status.paused!.since)).toBeLessThan(5_000);
    await waitFor(async () => (await broker.consumers(queue)) === 0, 'the consumer cancelled');
    await publishMany(30);
    await waitFor(async () => (await broker.count(queue)) === 30, '30 messages waiting in the broker');
    expect(handlerOf(app, Handler).calls).toHaveLength(0);
    expect(engine.health().queues.find((q) => q.queue === queue)).toEqual({ queue, consuming: true, state: 'paused' });
    expect(engine.activity().find((q) => q.queue === queue)?.state).toBe('paused by alice'); // the page's State column

    expect(engine.resume(queue, { by: 'bob' }).state).toBe('running');
    await waitFor(() => handlerOf(app, Handler).calls.length === 30, 'the 30 messages handled after the resume');
    await waitFor(async () => (await broker.count(queue)) === 0, 'an empty queue');
    expect(engine.activity().find((q) => q.queue === queue)).not.toHaveProperty('state');
    expect(logger.lines.filter((l) => l.includes(`Queue "${queue}"`))).toEqual([
      `warn Queue "${queue}" is now paused: paused by alice: payments API down, INC-142`,
      `log Queue "${queue}" is now running: resumed by bob`,
    ]);
    expect(events).toEqual([
      { queue, from: 'running', to: 'paused', reason: 'paused by alice: payments API down, INC-142', by: 'alice' },
      { queue, from: 'paused', to: 'running', reason: 'resumed by bob', by: 'bob' },
    ]);
  });

  it('refuses a pause without who, and names the queues it has for an unknown one', async () => {
    const { queue } = suite;
    const Handler = handlerFor({ queue }, () => undefined);
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    const engine = app.get(RetryEngine);
    expect(() => engine.pause(queue, { by: '' })).toThrow(`Cannot pause "${queue}": by is missing`);
    expect(() => engine.pause('nope', { by: 'alice' })).toThrow(`No handler of this application consumes "nope"; its handler queues: "${queue}"`);
    expect(engine.queueStates()).toEqual([{ queue, state: 'running' }]);
  });

  it('stays paused across a reconnection, and lets the handler in flight finish and ack', async () => {
    const { broker, queue } = suite;
    const proxy = await new TcpProxy().start();
    try {
      let release!: () => void;
      const slow = new Promise<void>((resolve) => (release = resolve));
      const Handler = handlerFor({ queue }, (payload) => ((payload as { i: number }).i === 0 ? slow : undefined));
      const app = (suite.app = await startApp([Handler], {
        ...TEST_OPTIONS,
        url: proxy.url,
        reconnect: { initialDelay: '50ms', maxDelay: '200ms' },
      }));
      const engine = app.get(RetryEngine);
      await publishMany(1);
      await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the first message in flight');
      engine.pause(queue, { by: 'alice' });
      release();
      await waitFor(async () => (await broker.count(queue)) === 0, 'the message in flight acked');
      await waitFor(async () => (await broker.consumers(queue)) === 0, 'the consumer cancelled');

      await proxy.cut();
      await proxy.restore();
      await waitFor(() => engine.health().connections.consume === true && engine.isConsuming, 'the reconnection');
      await publishMany(5);
      await waitFor(async () => (await broker.count(queue)) === 5, 'five messages waiting');
      // Give a wrongly resumed consumer the time to take them: they must still be there.
      await settleWindow(500);
      expect(await broker.consumers(queue)).toBe(0);
      expect(await broker.count(queue)).toBe(5);
      expect(engine.queueStates()[0]).toMatchObject({ state: 'paused', paused: { by: 'alice' } });

      engine.resume(queue, { by: 'alice' });
      await waitFor(() => handlerOf(app, Handler).calls.length === 6, 'the five handled after the resume');
    } finally {
      await suite.app?.close();
      suite.app = undefined;
      await proxy.stop();
    }
  });

  it('shuts down cleanly while paused and while the circuit is open: nothing lost, nothing left consuming', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, delays: ['200ms'], maxAttempts: 100, circuitBreaker: { consecutiveFailures: 3, openFor: '10s' } }, () => {
      throw new Error('dependency down');
    });
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    const engine = app.get(RetryEngine);
    await publishMany(10);
    await waitFor(() => engine.queueStates()[0].state === 'open', 'the circuit open');
    expect(engine.queueStates()[0]).toMatchObject({ circuit: 'open', openUntil: expect.any(String) });
    expect(engine.activity().find((q) => q.queue === queue)?.state).toBe('breaker open');
    engine.pause(queue, { by: 'alice' });
    const closing = Date.now();
    await app.close();
    suite.app = undefined;
    expect(Date.now() - closing).toBeLessThan(3_000);
    // Every message is in the queue or a tier; none parked, none lost.
    await waitFor(async () => (await broker.count(queue)) === 10, 'the ten messages back in the queue', 5_000);
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });

  it('half-open: takes exactly halfOpenCalls messages, closes on their success and takes the rest at full prefetch', async () => {
    const { broker, queue } = suite;
    let down = true;
    // Each change with the number of handler calls made by then: an order of events, which two timestamps in the same
    // millisecond are not (a call started right after the close could count as a trial call).
    let callsSoFar = () => 0;
    const changes: Array<{ to: string; calls: number }> = [];
    const observer: RetryObserver = { queueStateChanged: (e) => changes.push({ to: e.to, calls: callsSoFar() }) };
    const Handler = handlerFor(
      { queue, delays: ['100ms'], maxAttempts: 50, circuitBreaker: { consecutiveFailures: 2, openFor: '500ms', halfOpenCalls: 2 } },
      () => new Promise<void>((resolve, reject) => setTimeout(() => (down ? reject(new Error('down')) : resolve()), 50)),
    );
    const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, observers: [observer] }));
    const engine = app.get(RetryEngine);
    callsSoFar = () => handlerOf(app, Handler).calls.length;
    await publishMany(40);
    await waitFor(() => engine.queueStates()[0].state === 'open', 'the circuit open');
    const callsWhenOpened = handlerOf(app, Handler).calls.length;
    down = false;
    await waitFor(() => engine.queueStates()[0].state === 'running', 'closed again');
    const callsAtHalfOpen = changes.find((c) => c.to === 'half-open')!.calls;
    const callsAtClose = changes.find((c) => c.to === 'running')!.calls;
    // Exactly the two trial calls between half-open and closed.
    expect(callsAtClose - callsAtHalfOpen).toBe(2);
    expect(changes.map((c) => c.to)).toEqual(['open', 'half-open', 'running']);
    await waitFor(
      () =>
        new Set(
          handlerOf(app, Handler)
            .calls.filter((c) => c.at > 0)
            .map((c) => (c.payload as { i: number }).i),
        ).size === 40,
      'all 40',
    );
    expect(callsWhenOpened).toBeLessThanOrEqual(2 + 20); // the failures that opened it, and the others in flight then
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });

  it('a lost connection aborts the running calls: their failures are not counted, and our reconnection opens no circuit', async () => {
    const { broker, queue } = suite;
    const proxy = await new TcpProxy().start();
    try {
      const changes: string[] = [];
      const observer: RetryObserver = { queueStateChanged: (e) => changes.push(e.to) };
      // A first delivery's call waits on its dependency, passing the signal on (as fetch does); a redelivery answers.
      const Handler = handlerFor(
        { queue, prefetch: 5, delays: ['10s'], circuitBreaker: { consecutiveFailures: 3, openFor: '1m' } },
        (_payload, context) =>
          context.message.fields.redelivered
            ? undefined
            : new Promise((_resolve, reject) => context.signal.addEventListener('abort', () => reject(context.signal.reason as Error))),
      );
      const app = (suite.app = await startApp([Handler], {
        ...TEST_OPTIONS,
        observers: [observer],
        url: proxy.url,
        reconnect: { initialDelay: '50ms', maxDelay: '200ms' },
      }));
      const engine = app.get(RetryEngine);
      const calls = handlerOf(app, Handler).calls;
      await publishMany(5);
      await waitFor(() => calls.length === 5, 'five calls running');
      await proxy.cut();
      await proxy.restore();
      await waitFor(() => calls.filter((c) => c.redelivered).length === 5, 'the five redelivered after the reconnection and handled', 15_000);
      await waitFor(async () => (await broker.count(queue)) === 0, 'an empty queue');
      expect(changes).toEqual([]);
      expect(engine.queueStates()[0]).toMatchObject({ state: 'running', circuit: 'closed' });
      expect(await broker.count(`${queue}.error`)).toBe(0);
    } finally {
      await suite.app?.close();
      suite.app = undefined;
      await proxy.stop();
    }
  });

  it('counts a call cut by the handler timeout as a failure: a dependency that hangs opens the circuit', async () => {
    const { queue } = suite;
    const Handler = handlerFor(
      { queue, delays: ['10s'], timeout: '100ms', circuitBreaker: { consecutiveFailures: 3, openFor: '1m' } },
      () => new Promise(() => undefined), // never answers
    );
    const app = (suite.app = await startApp([Handler], SUITE_OPTIONS));
    await publishMany(10);
    await waitFor(() => app.get(RetryEngine).queueStates()[0].state === 'open', 'the circuit open');
    expect(handlerOf(app, Handler).calls.length).toBeLessThanOrEqual(3 + 20);
  });

  it('a quorum queue paused and resumed again and again: its own returns are not counted as crashes, nothing is parked', async () => {
    // Deliveries over the rate limit wait for a turn; each pause gives them back to the broker at once (not after their
    // turn), and the quorum queue counts each such return (x-delivery-count, or x-acquired-count on 4.3) as it counts a
    // crash. 12 pauses: more than the 10 returns at which a crash-looping message is parked as 'redelivery-limit'.
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, queueType: 'quorum', rateLimit: { calls: 1, per: '10s' }, prefetch: 3 }, () => undefined);
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    const engine = app.get(RetryEngine);
    const calls = handlerOf(app, Handler).calls;
    const inFlight = () => engine.activity().find((q) => q.queue === queue)?.inFlight ?? 0;
    await publishMany(3);
    await waitFor(() => calls.length === 1 && inFlight() === 2, 'one handled, two waiting for a turn');
    for (let round = 1; round <= 12; round++) {
      const waiting = 3 - calls.length; // a turn may come during the rounds: the one it lets through is handled
      expect({ round, waiting: waiting > 0 }).toEqual({ round, waiting: true });
      const pausedAt = Date.now();
      engine.pause(queue, { by: 'ops' });
      await waitFor(async () => inFlight() === 0 && (await broker.count(queue)) === 3 - calls.length, `round ${round}: back in the broker`);
      expect({ round, backAtOnce: Date.now() - pausedAt < 5_000 }).toEqual({ round, backAtOnce: true }); // not after a turn
      engine.resume(queue, { by: 'ops' });
      await waitFor(() => inFlight() === 3 - calls.length, `round ${round}: delivered again`);
    }
    await waitFor(() => calls.length === 3, 'every message handled once its turn came', 30_000);
    expect(await broker.count(`${queue}.error`)).toBe(0);
    expect(calls).toHaveLength(3);
  });

  it('a quorum queue paused again and again while its deliveries wait for their idempotency claim: no breaker failure, no redelivery limit', async () => {
    // Each pause takes back the deliveries whose claim (300 ms here, a slow store) is still on its way: none reached the
    // handler, so none is a failure for the breaker (3 in a row would open it for a minute), and each return is the
    // queue's own, read and counted again on every redelivery (11 rounds: past the 10 returns that park a crash-looping
    // message).
    const { broker, queue } = suite;
    const handled = new Set<string>();
    let claiming = 0;
    const store: IdempotencyStore = {
      claim: async (key) => {
        claiming++;
        await new Promise((resolve) => setTimeout(resolve, 300));
        claiming--;
        return handled.has(key) ? 'handled' : 'claimed';
      },
      renew: async () => true,
      release: async () => undefined,
      markHandled: async (key) => void handled.add(key),
    };
    const Handler = handlerFor(
      { queue, queueType: 'quorum', prefetch: 3, idempotency: { store }, circuitBreaker: { consecutiveFailures: 3, openFor: '1m' } },
      () => undefined,
    );
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    const engine = app.get(RetryEngine);
    const calls = handlerOf(app, Handler).calls;
    const inFlight = () => engine.activity().find((q) => q.queue === queue)?.inFlight ?? 0;
    for (let i = 0; i < 3; i++) await broker.publish('', queue, { i }, { messageId: `claim-${i}` });
    for (let round = 1; round <= 11; round++) {
      // Every delivery held is in its claim (one at a time while the quorum consumer is careful, at prefetch 1).
      await waitFor(() => claiming > 0 && claiming === inFlight(), `round ${round}: the deliveries held all in their claim`);
      engine.pause(queue, { by: 'ops' });
      await waitFor(async () => inFlight() === 0 && (await broker.count(queue)) === 3, `round ${round}: back in the broker`);
      expect({ round, calls: calls.length, status: engine.resume(queue, { by: 'ops' }) }).toMatchObject({
        round,
        calls: 0,
        status: { state: 'running', circuit: 'closed' },
      });
    }
    await waitFor(() => calls.length === 3, 'each message handled once the pauses end', 15_000);
    await waitFor(async () => (await broker.count(queue)) === 0, 'an empty queue');
    expect(await broker.count(`${queue}.error`)).toBe(0);
    expect(calls.map((call) => (call.payload as { i: number }).i).sort()).toEqual([0, 1, 2]);
  });

  it('rate limit: at most `calls` handler calls per `per`, the rest wait unacked within prefetch', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, rateLimit: { calls: 5, per: '1s' }, prefetch: 10 }, () => undefined);
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    await publishMany(20);
    const calls = handlerOf(app, Handler).calls;
    await waitFor(() => calls.length >= 1, 'the first call');
    // The consumer holds the prefetch (10) unacked, waiting for their turn; the rest stay ready in the broker.
    expect(await broker.count(queue)).toBeGreaterThanOrEqual(20 - 10 - 2);
    await waitFor(() => calls.length === 20, 'the 20 calls', 15_000);
    const first = calls[0].at;
    // One call every 200 ms: the 20th 3.8 s after the first, and no second holds more than 5.
    expect(calls[19].at - first).toBeGreaterThanOrEqual(3_800 - 20);
    for (let i = 0; i < calls.length; i++) {
      expect(calls.filter((c) => c.at >= calls[i].at && c.at < calls[i].at + 1_000 - 20).length).toBeLessThanOrEqual(5);
    }
    expect(engine(app).queueStates()[0]).toMatchObject({ state: 'running', rateLimit: { calls: 5, per: '1s' } });
  });
});

const engine = (app: INestApplicationContext) => app.get(RetryEngine);
