import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/** RetryContext.signal: aborts when the delivery's channel is lost, or when the shutdown timeout passes. */
describe('the handler context signal', () => {
  const suite = useSuite('e2e.signal');

  /** A handler that waits for its signal, records when it aborted, and returns. */
  const waitsForAbort = (aborted: number[]) =>
    handlerFor(
      { queue: suite.queue, delays: ['50ms'] },
      (_, ctx) => new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => (aborted.push(Date.now()), resolve()))),
    );

  it('aborts when the connection is lost; the message comes back and runs again', async () => {
    const proxy = await new TcpProxy().start();
    try {
      const aborted: number[] = [];
      const Handler = waitsForAbort(aborted);
      suite.app = await startApp([Handler], { ...TEST_OPTIONS, url: proxy.url, reconnect: { initialDelay: '50ms' }, shutdownTimeout: '300ms' });
      await suite.broker.publish('', suite.queue, { id: 1 });
      await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 1, 'the handler running');
      const cutAt = Date.now();
      await proxy.cut();
      await waitFor(() => aborted.length === 1, 'the signal to abort', 2_000);
      expect(aborted[0] - cutAt).toBeLessThan(2_000);
      await proxy.restore();
      await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 2, 'the redelivery');
      expect(handlerOf(suite.app, Handler).calls[1].redelivered).toBe(true);
    } finally {
      await suite.app?.close();
      suite.app = undefined;
      await proxy.stop();
    }
  });

  it('aborts when app.close() has waited shutdownTimeout', async () => {
    const aborted: number[] = [];
    const Handler = waitsForAbort(aborted);
    suite.app = await startApp([Handler], { ...TEST_OPTIONS, shutdownTimeout: '300ms' });
    await suite.broker.publish('', suite.queue, { id: 1 });
    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 1, 'the handler running');
    const closingAt = Date.now();
    await suite.app.close();
    suite.app = undefined;
    expect(aborted).toHaveLength(1);
    expect(aborted[0] - closingAt).toBeGreaterThanOrEqual(290);
    expect(aborted[0] - closingAt).toBeLessThan(1_000);
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 1, 'the message back in the queue');
  });
});
