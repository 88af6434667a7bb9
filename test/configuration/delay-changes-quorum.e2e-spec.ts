import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { closeConnections } from '../support/broker-control.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { retryTopologyNames } from 'nestjs-amqp-retry';

/**
 * Changing delays on quorum queues must not kill the connection (deleteQueue ifEmpty is not implemented
 * for them), a first failure must never land in two first tiers, and two versions running side by side (a rolling
 * deploy) must not take first failures back and forth nor delete each other's tiers.
 */
describe.each(['classic', 'quorum'] as const)('changing delays (%s queues)', (queueType) => {
  const suite = useSuite(`e2e.delays.${queueType}`, {
    extraQueues: (queue) => [1_000, 2_000, 60_000, 120_000].flatMap((delay) => retryTopologyNames(queue, { delays: [delay] }).tiers),
  });

  const version = (delay: number, connectionName: string, behaviour: () => unknown = () => undefined) =>
    [handlerFor({ queue: suite.queue, delays: [delay], queueType }, behaviour), { ...TEST_OPTIONS, connectionName }] as const;

  it('starts with new delays, deletes the old empty tier, and the connection survives', async () => {
    const [V1, options1] = version(1_000, uniqueName('e2e-v1'));
    suite.apps.push(await startApp([V1], options1));
    await suite.apps.pop()!.close();
    const [V2, options2] = version(2_000, uniqueName('e2e-v2'), () => {
      throw new Error('fails');
    });
    const app = await startApp([V2], options2);
    suite.apps.push(app);
    const [oldTier] = retryTopologyNames(suite.queue, { delays: [1_000] }).tiers;
    const [newTier] = retryTopologyNames(suite.queue, { delays: [2_000] }).tiers;
    expect(await suite.broker.exists(oldTier)).toBe(false);
    await suite.broker.publish('', suite.queue, { id: 1 });
    await waitFor(async () => (await suite.broker.count(newTier)) === 1, 'the failure in the new tier');
    expect(handlerOf(app, V2).calls).toHaveLength(1);
  });

  it('runs two versions side by side: one first tier at a time, no deletions, no flip on reconnection', async () => {
    const fail = () => {
      throw new Error('fails');
    };
    const v1Name = uniqueName('e2e-v1');
    const [V1, options1] = version(60_000, v1Name, fail);
    suite.apps.push(await startApp([V1], { ...options1, reconnect: { initialDelay: '50ms' } }));
    const [V2, options2] = version(120_000, uniqueName('e2e-v2'), fail);
    suite.apps.push(await startApp([V2], options2));
    // Long delays, so that the failures stay in their tier while the test counts them.
    const [oldTier] = retryTopologyNames(suite.queue, { delays: [60_000] }).tiers;
    const [newTier] = retryTopologyNames(suite.queue, { delays: [120_000] }).tiers;
    expect(await suite.broker.exists(oldTier)).toBe(true); // v1 still runs: its tier stays

    for (let id = 0; id < 10; id++) await suite.broker.publish('', suite.queue, { id });
    // Every first failure lands in exactly one tier, the newest start's.
    await waitFor(async () => (await suite.broker.count(newTier)) === 10, 'ten failures in the new first tier');
    expect(await suite.broker.count(oldTier)).toBe(0);

    expect(await closeConnections(v1Name)).toBeGreaterThanOrEqual(1); // v1 reconnects: it must not take first failures back
    await waitFor(async () => (await suite.broker.consumers(suite.queue)) === 2, 'v1 consuming again');
    for (let id = 10; id < 20; id++) await suite.broker.publish('', suite.queue, { id });
    await waitFor(async () => (await suite.broker.count(newTier)) === 20, 'twenty failures in the new first tier');
    expect(await suite.broker.count(oldTier)).toBe(0);
  });
});
