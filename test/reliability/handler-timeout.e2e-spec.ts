import { HandlerTimeoutError } from 'nestjs-amqp-retry';
import { createApp, handlerFor, handlerOf } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { headersOf, settleWindow, SUITE_OPTIONS, useSuite } from '../support/suite.js';

/**
 * A handler that never returns would hold its message and a prefetch slot until a restart (RabbitMQ 4.3 no longer
 * applies consumer timeouts to classic queues). With `timeout`, past it the call's signal aborts, the attempt fails
 * and is retried or parked, and whatever the abandoned call does later changes nothing.
 */
describe('handler timeout', () => {
  const suite = useSuite('e2e.handler-timeout');

  async function start(providers: Parameters<typeof createApp>[0], options = SUITE_OPTIONS): Promise<RecordingLogger> {
    const logger = new RecordingLogger();
    suite.app = await createApp(providers, options);
    suite.app.useLogger(logger);
    await suite.app.init();
    return logger;
  }

  it('fails every attempt of a handler that never returns, aborts its signal, and parks the message naming the timeout', async () => {
    const { broker, queue } = suite;
    const reasons: unknown[] = [];
    const Handler = handlerFor({ queue, delays: [100], maxAttempts: 3, timeout: '300ms' }, (_, ctx) => {
      ctx.signal.addEventListener('abort', () => reasons.push(ctx.signal.reason));
      return new Promise(() => undefined); // never returns, never looks at its signal
    });
    await start([Handler]);
    const sent = Date.now();
    await broker.publish('', queue, { id: 'stuck' });

    const [parked] = await broker.take(`${queue}.error`, 1);
    const elapsed = Date.now() - sent;
    const calls = handlerOf(suite.app!, Handler).calls;
    expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
    // Three attempts of 300 ms and two waits of 100 ms: at least 1.1 s, and never the minutes a stuck handler holds.
    expect(elapsed).toBeGreaterThanOrEqual(1_100);
    expect(elapsed).toBeLessThan(5_000);
    expect(calls[1].at - calls[0].at).toBeGreaterThanOrEqual(395);
    expect(headersOf(parked)).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 3 });
    expect(headersOf(parked)['x-exception-message']).toBe(
      `The handler of "${queue}" did not finish attempt 3 within its timeout of 300ms: its signal was aborted and the attempt counts as failed`,
    );
    expect(reasons).toHaveLength(3);
    expect(reasons.every((reason) => reason instanceof HandlerTimeoutError)).toBe(true);
    await settleWindow(400);
    expect(await broker.count(`${queue}.error`)).toBe(0);
    expect(await broker.count(queue)).toBe(0);
  });

  it('lets the late result of an abandoned call change nothing: no second ack, no second retry, no second park', async () => {
    const { broker, queue } = suite;
    const late: string[] = [];
    // Attempt 1 outlives its 200 ms, then fails late; attempt 2 outlives it too, then succeeds late; attempt 3 is quick.
    const Handler = handlerFor({ queue, delays: [50], maxAttempts: 3, timeout: '200ms' }, async (_, ctx) => {
      if (ctx.attempt === 3) return;
      await new Promise((resolve) => setTimeout(resolve, 500));
      late.push(`attempt ${ctx.attempt} ended`);
      if (ctx.attempt === 1) throw new Error('failed late');
    });
    const logger = await start([Handler]);
    await broker.publish('', queue, { id: 'slow' });

    await waitFor(() => late.length === 2, 'the abandoned calls to end', 5_000);
    await settleWindow(300); // bounded: a second retry, park or a channel closed by a double ack would show here
    const calls = handlerOf(suite.app!, Handler).calls;
    expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
    expect(await broker.count(queue)).toBe(0);
    expect(await broker.count(`${queue}.error`)).toBe(0);
    expect(logger.count(/closed|Unexpected failure|PRECONDITION/)).toBe(0);
  });

  it("applies the module's handlerTimeout to handlers without their own, and timeout: 0 turns it off for one", async () => {
    const { broker, queue } = suite;
    const unlimited = `${queue}.unlimited`;
    const slow = () => new Promise((resolve) => setTimeout(resolve, 400));
    const Limited = handlerFor({ queue, delays: [50], maxAttempts: 2 }, slow);
    const Unlimited = handlerFor({ queue: unlimited, delays: [50], maxAttempts: 2, timeout: 0 }, slow);
    try {
      await start([Limited, Unlimited], { ...SUITE_OPTIONS, handlerTimeout: '150ms' });
      await broker.publish('', queue, { id: 'limited' });
      await broker.publish('', unlimited, { id: 'unlimited' });

      const [parked] = await broker.take(`${queue}.error`, 1);
      expect(headersOf(parked)['x-exception-message']).toContain('within its timeout of 150ms');
      expect(handlerOf(suite.app!, Limited).calls).toHaveLength(2);
      await waitFor(() => handlerOf(suite.app!, Unlimited).calls.length === 1, 'the unlimited handler');
      await settleWindow(500); // bounded: a retry of the unlimited handler's message would show here
      expect(handlerOf(suite.app!, Unlimited).calls).toHaveLength(1);
      expect(await broker.count(`${unlimited}.error`)).toBe(0);
      expect(await broker.count(unlimited)).toBe(0);
    } finally {
      await suite.app?.close();
      suite.app = undefined;
      await broker.deleteRetryTopology(unlimited);
    }
  });
});
