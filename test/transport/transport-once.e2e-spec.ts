import type { INestMicroservice } from '@nestjs/common';
import { storeKeyOf } from '../../libs/amqp-retry/src/pipeline/idempotency.step.js';
import { redisKind, uniqueSpace } from '../support/stores.js';
import { TestBroker, uniqueName } from '../support/broker.js';
import { cleanUp } from '../support/suite.js';
import { patternTiers, sendTwiceAndFailOnce, startRetryMicroservice } from './transport-app.js';

describe('the transport with an idempotency store', () => {
  let broker: TestBroker;
  let app: INestMicroservice | undefined;
  const queue = uniqueName('e2e.transport.once');
  const space = uniqueSpace();

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await cleanUp(
      () => app?.close(),
      () => redisKind.cleanUp(space),
      // The tiers of order.created's own schedule (200 ms), which the plan record does not name.
      () => broker?.deleteRetryTopology(queue, { queues: patternTiers(queue) }),
      () => broker?.close(),
    );
  });

  it('handles an event once when the same message id comes twice, and still retries a failure through its pattern policy', async () => {
    app = await startRetryMicroservice({ queue, idempotency: { store: redisKind.create(space) } });
    const calls = await sendTwiceAndFailOnce(app, broker, queue);
    expect(calls.filter((c) => c.pattern === 'order.paid').map((c) => c.data)).toEqual([{ id: 1 }]);
    expect(calls.filter((c) => c.pattern === 'order.created').map((c) => c.attempt)).toEqual([1, 2]);
    expect(await redisKind.holds(space, storeKeyOf(queue, 'same-id'))).toBe(true);
  });
});
