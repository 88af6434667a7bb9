import { retryTopologyNames } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { ctl } from '../support/broker-control.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { headersOf, settleWindow, SUITE_OPTIONS, useSuite } from '../support/suite.js';

/** Closes the broker side of the connections whose connection_name starts with `prefix`, in one rabbitmqctl call. */
async function closeConnectionsNamed(prefix: string): Promise<void> {
  const closing = [
    `Prefix = <<"${prefix}">>,`,
    '[P || P <- rabbit_networking:connections(),',
    'case catch rabbit_reader:info(P, [client_properties]) of',
    '[{client_properties, Props}] -> case lists:keyfind(<<"connection_name">>, 1, Props) of',
    '{_, _, Name} when is_binary(Name) -> binary:longest_common_prefix([Name, Prefix]) =:= byte_size(Prefix)',
    'andalso ok =:= rabbit_networking:close_connection(P, "closed by a test");',
    '_ -> false end;',
    '_ -> false end].',
  ].join(' ');
  await ctl('eval', closing);
}

/**
 * The plan queue (`Q.retry.plan`) holds the record of the newest start, read on every start and every reconnection.
 * A quorum queue counts each read left unsettled, and RabbitMQ 4.x drops a message past its delivery limit (20 by
 * default): the record must outlive any number of reads, or a start with new delays would leave the old first tier
 * bound beside its own and every failure would be retried, and parked, twice.
 */
describe('the retry plan record of a quorum queue', () => {
  const suite = useSuite('e2e.plan-wear', {
    extraQueues: (queue) => [300, 600].flatMap((delay) => retryTopologyNames(queue, { delays: [delay] }).tiers),
  });

  it('outlives 25 reconnections of two instances at once: one record, and a start with new delays retries and parks a failure once', async () => {
    const { broker, queue } = suite;
    const fail = () => {
      throw new Error('always');
    };
    const v1Name = uniqueName('e2e-plan-v1');
    let consumerUps = 0;
    const observer = { consumerUp: ({ queue: consumed }: { queue: string }) => void (consumed === queue && consumerUps++) };
    const V1 = handlerFor({ queue, delays: ['300ms'], maxAttempts: 2, queueType: 'quorum' }, fail);
    const reconnect = { initialDelay: '20ms', maxDelay: '100ms' };
    // Two instances of one version, whose reconnections read (and refresh) the record at the same moment.
    for (const instance of ['a', 'b']) {
      suite.apps.push(await startApp([V1], { ...SUITE_OPTIONS, connectionName: `${v1Name} ${instance}`, reconnect, observers: [observer] }));
    }
    await waitFor(() => consumerUps === 2, 'both instances consuming');
    for (let round = 1; round <= 25; round++) {
      await closeConnectionsNamed(v1Name);
      // Consuming again: each recovery read the record first.
      await waitFor(() => consumerUps === 2 * (round + 1), `both instances consuming again after close ${round}`, 20_000);
    }
    for (let app = suite.apps.pop(); app; app = suite.apps.pop()) await app.close();
    expect(await broker.count(`${queue}.retry.plan`)).toBe(1); // neither lost nor copied twice

    const V2 = handlerFor({ queue, delays: ['600ms'], maxAttempts: 2, queueType: 'quorum' }, fail);
    suite.app = await startApp([V2], SUITE_OPTIONS);
    const [oldTier] = retryTopologyNames(queue, { delays: [300] }).tiers;
    await broker.publish('', queue, { id: 1 });

    const parked = await broker.take(`${queue}.error`, 1, 10_000);
    await settleWindow(1_500); // a second copy of the failure would be retried and parked within this
    expect(parked.map((m) => headersOf(m)['x-parked-reason'])).toEqual(['exhausted']);
    expect(await broker.count(`${queue}.error`)).toBe(0);
    expect(handlerOf(suite.app, V2).calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(await broker.exists(oldTier)).toBe(false); // retired: the record named it
  }, 120_000);
});
