import type { INestApplicationContext } from '@nestjs/common';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { closeConnections } from '../support/broker-control.js';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { retryTopologyNames } from 'nestjs-amqp-retry';

/**
 * Finding 10: changing delays on quorum queues must not kill the connection (deleteQueue ifEmpty is not implemented
 * for them), a first failure must never land in two first tiers, and two versions running side by side (a rolling
 * deploy) must not take first failures back and forth nor delete each other's tiers.
 */
describe.each(['classic', 'quorum'] as const)('changing delays (%s queues)', (queueType) => {
  let broker: TestBroker;
  let queue: string;
  const apps: INestApplicationContext[] = [];

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await broker.close();
  });
  beforeEach(() => {
    queue = uniqueName(`e2e.delays.${queueType}`);
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    const tiers = [1_000, 2_000, 60_000, 120_000].flatMap((delay) => retryTopologyNames(queue, { delays: [delay] }).tiers);
    await broker.deleteRetryTopology(queue, { queues: tiers });
  });

  const version = (delay: number, connectionName: string, behaviour: () => unknown = () => undefined) =>
    [handlerFor({ queue, delays: [delay], queueType }, behaviour), { ...TEST_OPTIONS, connectionName }] as const;

  it('starts with new delays, deletes the old empty tier, and the connection survives', async () => {
    const [V1, options1] = version(1_000, uniqueName('e2e-v1'));
    apps.push(await startApp([V1], options1));
    await apps.pop()!.close();
    const [V2, options2] = version(2_000, uniqueName('e2e-v2'), () => {
      throw new Error('fails');
    });
    const app = await startApp([V2], options2);
    apps.push(app);
    const [oldTier] = retryTopologyNames(queue, { delays: [1_000] }).tiers;
    const [newTier] = retryTopologyNames(queue, { delays: [2_000] }).tiers;
    expect(await broker.exists(oldTier)).toBe(false);
    await broker.publish('', queue, { id: 1 });
    await waitFor(async () => (await broker.count(newTier)) === 1, 'the failure in the new tier');
    expect(handlerOf(app, V2).calls).toHaveLength(1);
  });

  it('runs two versions side by side: one first tier at a time, no deletions, no flip on reconnection', async () => {
    const fail = () => {
      throw new Error('fails');
    };
    const v1Name = uniqueName('e2e-v1');
    const [V1, options1] = version(60_000, v1Name, fail);
    apps.push(await startApp([V1], { ...options1, reconnect: { initialDelay: '50ms' } }));
    const [V2, options2] = version(120_000, uniqueName('e2e-v2'), fail);
    apps.push(await startApp([V2], options2));
    // Long delays, so that the failures stay in their tier while the test counts them.
    const [oldTier] = retryTopologyNames(queue, { delays: [60_000] }).tiers;
    const [newTier] = retryTopologyNames(queue, { delays: [120_000] }).tiers;
    expect(await broker.exists(oldTier)).toBe(true); // v1 still runs: its tier stays

    for (let id = 0; id < 10; id++) await broker.publish('', queue, { id });
    // Every first failure lands in exactly one tier, the newest start's.
    await waitFor(async () => (await broker.count(newTier)) === 10, 'ten failures in the new first tier');
    expect(await broker.count(oldTier)).toBe(0);

    expect(await closeConnections(v1Name)).toBeGreaterThanOrEqual(1); // v1 reconnects: it must not take first failures back
    await waitFor(async () => (await broker.consumers(queue)) === 2, 'v1 consuming again');
    for (let id = 10; id < 20; id++) await broker.publish('', queue, { id });
    await waitFor(async () => (await broker.count(newTier)) === 20, 'twenty failures in the new first tier');
    expect(await broker.count(oldTier)).toBe(0);
  });
});
