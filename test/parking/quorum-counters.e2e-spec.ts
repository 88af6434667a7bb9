import { NonRetryableError, ParkedMessages } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { cleanUp, headersOf, useSuite } from '../support/suite.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/**
 * The broker's delivery counters of a quorum queue (`x-delivery-count`, and `x-acquired-count` on RabbitMQ 4.3+) that
 * count something, with their values. A first hand-out may carry `x-delivery-count: 0` (RabbitMQ 3.10).
 */
const counted = (headers: Record<string, unknown> | undefined) =>
  Object.entries(headers ?? {}).filter(([name, value]) => /^x-(delivery|acquired)-count$/.test(name) && Number(value) > 0);

/**
 * A quorum queue counts each delivery that its consumer's connection took down with it. The parked copy of such a
 * message must carry none of those counts, on any version, or a replay would start with deliveries it never had.
 */
describe('the parked copy of a quorum message carries no delivery counter of the broker', () => {
  const suite = useSuite('e2e.quorum-counters');

  it('three lost deliveries, then a park: the copy and its replay carry neither x-delivery-count nor x-acquired-count', async () => {
    const { broker, queue } = suite;
    const proxy = await new TcpProxy().start();
    let parked: ParkedMessages | undefined;
    try {
      let replayed = false;
      const Handler = handlerFor({ queue, queueType: 'quorum' }, async () => {
        if (replayed) return;
        if (handlerOf(suite.app!, Handler).calls.length <= 3) {
          await proxy.cut(); // as if the process died under the message: the broker counts the delivery
          await proxy.restore();
          return new Promise(() => undefined);
        }
        throw new NonRetryableError('unknown customer');
      });
      suite.app = await startApp([Handler], {
        ...TEST_OPTIONS,
        url: proxy.url,
        reconnect: { initialDelay: '20ms', maxDelay: '50ms' },
        shutdownTimeout: '50ms',
      });
      await broker.publish('', queue, { id: 'crashing' }, { messageId: 'crashing' });

      await waitFor(async () => (await broker.count(`${queue}.error`)) === 1, 'the park', 30_000);
      const copy = await broker.channel.get(`${queue}.error`, { noAck: false });
      if (!copy) throw new Error('no parked copy');
      broker.channel.nack(copy, false, true); // back in the parking queue, as a browse leaves it (a quorum queue counts that too)
      const calls = handlerOf(suite.app, Handler).calls;
      expect(calls).toHaveLength(4);
      // What the fourth delivery carried (4.3: x-acquired-count too), and what the copy keeps.
      expect(counted(calls[3].properties.headers)).toContainEqual(['x-delivery-count', 3]);
      expect(headersOf(copy)).toMatchObject({ 'x-parked-reason': 'non-retryable' });
      expect(counted(headersOf(copy))).toEqual([]); // read at its first hand-out from the parking queue

      // Replayed by ParkedMessages: the handler sees a first delivery.
      replayed = true;
      parked = await ParkedMessages.connect({ url: AMQP_URL, queues: [queue] });
      expect(await parked.replay({ errorQueue: `${queue}.error` })).toMatchObject({ matched: 1, replayed: 1 });
      await waitFor(() => calls.length === 5, 'the replayed delivery');
      expect({ attempt: calls[4].attempt, redelivered: calls[4].redelivered, counted: counted(calls[4].properties.headers) }).toEqual({
        attempt: 1,
        redelivered: false,
        counted: [],
      });
    } finally {
      await cleanUp(
        () => parked?.close(),
        () => suite.app?.close(),
        () => proxy.stop(),
      );
      suite.app = undefined;
    }
  });
});
