import { retryTopologyNames } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { ctl } from '../support/broker-control.js';
import { waitFor } from '../support/broker.js';
import { cleanUp, headersOf, settleWindow, SUITE_OPTIONS, useSuite } from '../support/suite.js';

/** The bindings whose source is `exchange`, as "destination (kind)". */
async function bindingsFrom(exchange: string): Promise<string[]> {
  const lines = (await ctl('list_bindings', 'source_name', 'destination_name', 'destination_kind', '-q', '--no-table-headers')).split('\n');
  return lines
    .map((line) => line.split('\t'))
    .filter(([source]) => source === exchange)
    .map(([, destination, kind]) => `${destination} (${kind})`)
    .sort();
}

describe('first failures of a queue declared by an earlier release', () => {
  const suite = useSuite('e2e.takeover');

  it('moves the first tier from a direct binding on the first-failure exchange behind the death sort, without a duplicate', async () => {
    const { broker, queue } = suite;
    const options = { queue, delays: ['300ms'], maxAttempts: 2 };
    const names = retryTopologyNames(queue, options);
    const [tier] = names.tiers;
    suite.app = await startApp([handlerFor(options, () => undefined)], SUITE_OPTIONS);
    await cleanUp(() => suite.app?.close());
    suite.app = undefined;
    // The earlier release's layout: the first tier bound straight to <queue>.dlx.first, no sort exchange, no dead-letter queue.
    await broker.channel.deleteExchange(`${queue}.dlx.sort`);
    await broker.channel.deleteExchange(`${queue}.dlx.first-tier`);
    await broker.channel.deleteQueue(`${queue}.dlx.dead`);
    await broker.channel.bindQueue(tier, names.firstFailureExchange, '');
    expect(await bindingsFrom(names.firstFailureExchange)).toEqual([`${tier} (queue)`]);

    const Handler = handlerFor({ ...options, prefetch: 1 }, async () => {
      await settleWindow(500);
      throw new Error('always');
    });
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    expect(await bindingsFrom(names.firstFailureExchange)).toEqual([`${queue}.dlx.sort (exchange)`]);
    expect(await bindingsFrom(`${queue}.dlx.first-tier`)).toEqual([`${tier} (queue)`]);
    await broker.publish('', queue, { id: 1 });
    await broker.publish('', queue, { id: 2 }, { expiration: '100' }); // expires behind message 1: sorted out, parked

    const parked = await broker.take(`${queue}.error`, 2, 10_000);
    await settleWindow(1_000); // a copy of the first failure in a second tier would come back within this
    expect(parked.map((m) => headersOf(m)['x-parked-reason']).sort()).toEqual(['exhausted', 'expired']);
    expect(handlerOf(suite.app, Handler).calls.map((c) => [(c.payload as { id: number }).id, c.attempt])).toEqual([
      [1, 1],
      [1, 2],
    ]);
    await waitFor(async () => (await broker.count(tier)) === 0, 'the tier empty');
  });
});
