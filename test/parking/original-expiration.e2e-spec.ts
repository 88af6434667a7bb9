import type { INestMicroservice } from '@nestjs/common';
import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { headersOf, SUITE_OPTIONS, useSuite } from '../support/suite.js';
import { OrdersController, patternTiers, startRetryMicroservice } from '../transport/transport-app.js';

/**
 * A parked copy has no `expiration` (it would expire in the parking queue) and keeps the one the message was published
 * with as `x-original-expiration`, also after retries: the broker removes the property when it dead-letters the
 * message into a tier, and records it in that `x-death` entry's `original-expiration`.
 */
describe('x-original-expiration on a parked copy', () => {
  const suite = useSuite('e2e.original-expiration');

  it.each(['classic', 'quorum'] as const)('a %s message retried through two tiers keeps the expiration it was published with', async (queueType) => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, queueType, delays: ['50ms', '100ms'], maxAttempts: 3 }, () => {
      throw new Error('still failing');
    });
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    await broker.publish('', queue, { id: 1 }, { messageId: 'expiring', expiration: '60000' });

    const [parked] = await broker.take(`${queue}.error`, 1, 15_000);
    const calls = handlerOf(suite.app, Handler).calls;
    expect(calls.map((c) => [c.attempt, c.properties.expiration])).toEqual([
      [1, '60000'],
      [2, undefined], // the broker removed it when it dead-lettered the message into the first tier
      [3, undefined],
    ]);
    expect({
      expiration: parked.properties.expiration,
      header: headersOf(parked)['x-original-expiration'],
      reason: headersOf(parked)['x-parked-reason'],
    }).toEqual({
      expiration: undefined,
      header: '60000',
      reason: 'exhausted',
    });
  });

  it('a message parked at its first attempt keeps its own expiration', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, maxAttempts: 1 }, () => {
      throw new Error('no retry');
    });
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    await broker.publish('', queue, { id: 1 }, { expiration: '45000' });
    const [parked] = await broker.take(`${queue}.error`, 1);
    expect({ expiration: parked.properties.expiration, header: headersOf(parked)['x-original-expiration'] }).toEqual({
      expiration: undefined,
      header: '45000',
    });
  });

  it("a transport pattern's first failure, moved into the pattern's own schedule by publishing, keeps it too", async () => {
    const { broker, queue } = suite;
    suite.extraQueues.push(...patternTiers(queue));
    let app: INestMicroservice | undefined;
    try {
      app = await startRetryMicroservice({ queue });
      // order.created has its own schedule (200 ms, 3 attempts): its first failure is published into that schedule's tier.
      await broker.publish('', queue, { pattern: 'order.created', data: { id: 7, failures: 9 } }, { expiration: '60000' });
      const [parked] = await broker.take(`${queue}.error`, 1, 15_000);
      expect(app.get(OrdersController).calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
      expect({ expiration: parked.properties.expiration, header: headersOf(parked)['x-original-expiration'] }).toEqual({
        expiration: undefined,
        header: '60000',
      });
    } finally {
      await app?.close();
    }
  });
});
