import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { useSuite } from './harness.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/**
 * Finding 6: a quorum queue counts every unsettled delivery when a connection dies. A poison message that kills the
 * connection each time must be parked alone; the messages in flight beside it must never reach the redelivery limit.
 */
describe('a poison message on a quorum queue', () => {
  const suite = useSuite('e2e.poison');

  it('parks only the poison message; the 60 good ones in flight beside it are all handled', async () => {
    const proxy = await new TcpProxy().start();
    try {
      let crashes = 0;
      const Handler = handlerFor({ queue: suite.queue, queueType: 'quorum', prefetch: 20 }, async (payload) => {
        if ((payload as { id: string }).id === 'poison') {
          crashes++;
          await proxy.cut(); // as if the process died: every unsettled delivery of the connection is returned
          await proxy.restore();
          return new Promise(() => undefined);
        }
        await new Promise((resolve) => setTimeout(resolve, 30));
      });
      suite.app = await startApp([Handler], {
        ...TEST_OPTIONS,
        url: proxy.url,
        reconnect: { initialDelay: '20ms', maxDelay: '100ms' },
        shutdownTimeout: '50ms',
      });
      for (let id = 0; id < 30; id++) await suite.broker.publish('', suite.queue, { id: `good-${id}` });
      await suite.broker.publish('', suite.queue, { id: 'poison' });
      for (let id = 30; id < 60; id++) await suite.broker.publish('', suite.queue, { id: `good-${id}` });

      const [parked] = await suite.broker.take(`${suite.queue}.error`, 1, 60_000);
      expect(JSON.parse(parked.content.toString())).toEqual({ id: 'poison' });
      expect(parked.properties.headers?.['x-parked-reason']).toBe('redelivery-limit');
      const handled = () =>
        new Set(
          handlerOf(suite.app!, Handler)
            .calls.map((c) => (c.payload as { id: string }).id)
            .filter((id) => id !== 'poison'),
        );
      await waitFor(async () => handled().size === 60 && (await suite.broker.count(suite.queue)) === 0, 'every good message handled', 30_000);
      await new Promise((resolve) => setTimeout(resolve, 500)); // a settle window: nothing else is parked
      expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
      expect(crashes).toBe(10);
    } finally {
      await suite.app?.close();
      suite.app = undefined;
      await proxy.stop();
    }
  });
});
