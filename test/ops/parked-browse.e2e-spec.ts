import { NonRetryableError, ParkedMessages } from 'nestjs-amqp-retry';
import { handlerFor, startApp } from '../support/app.js';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { cleanUp, headersOf, SUITE_OPTIONS, useSuite } from '../support/suite.js';

/**
 * What a walk of a parking queue (list, show, summary, export, the page) leaves behind: it takes each message without
 * acking it and gives it back by closing its channel, so the broker marks each one redelivered, and a quorum parking
 * queue counts the hand-out. Body, properties, the parking headers, the id and the order stay as they were.
 */
describe('browsing a parking queue', () => {
  const suite = useSuite('e2e.parked-browse');

  it.each(['classic', 'quorum'] as const)(
    'a %s parking queue after two lists: redelivered, counted on quorum, nothing else changed',
    async (queueType) => {
      const { broker, queue } = suite;
      const errorQueue = `${queue}.error`;
      const Handler = handlerFor({ queue, queueType }, () => {
        throw new NonRetryableError('unknown customer');
      });
      suite.app = await startApp([Handler], SUITE_OPTIONS);
      for (let n = 0; n < 3; n++) await broker.publish('', queue, { n }, { messageId: `m-${n}` });
      await waitFor(async () => (await broker.count(errorQueue)) === 3, 'three parks');

      const parked = await ParkedMessages.connect({ url: AMQP_URL, queues: [queue] });
      try {
        const before = await parked.list({ queue });
        expect(before.total).toBe(3);
        const after = await parked.list({ queue });
        expect(after.items.map((m) => [m.id, m.body, m.headers])).toEqual(before.items.map((m) => [m.id, m.body, m.headers]));
      } finally {
        await cleanUp(() => parked.close());
      }

      // Two walks (the lists above), then a consumer of the parking queue: what it receives.
      const taken = await broker.take(errorQueue, 3);
      expect(taken.map((m) => [JSON.parse(m.content.toString()), m.fields.redelivered])).toEqual([
        [{ n: 0 }, true],
        [{ n: 1 }, true],
        [{ n: 2 }, true],
      ]);
      const counters = taken.map((m) => [headersOf(m)['x-delivery-count'], headersOf(m)['x-acquired-count']]);
      if (queueType === 'classic') expect(counters).toEqual(Array(3).fill([undefined, undefined]));
      // Quorum: each walk's hand-out counted (RabbitMQ 4.3 counts it in x-acquired-count too).
      else for (const [delivery, acquired] of counters) expect([delivery, acquired === undefined || acquired === 2]).toEqual([2, true]);
      expect(taken.map((m) => headersOf(m)['x-parked-reason'])).toEqual(Array(3).fill('non-retryable'));
    },
  );

  it('refreshes a worn quorum message that a show stops at, so that repeated shows never reach the delivery limit', async () => {
    const { broker, queue } = suite;
    const errorQueue = `${queue}.error`;
    const Handler = handlerFor({ queue, queueType: 'quorum' }, () => {
      throw new NonRetryableError('unknown customer');
    });
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    await broker.publish('', queue, { n: 1 }, { messageId: 'm-shown' });
    await waitFor(async () => (await broker.count(errorQueue)) === 1, 'the park');
    const parked = await ParkedMessages.connect({ url: AMQP_URL, queues: [queue] });
    try {
      const [{ id }] = (await parked.list({ queue })).items;
      // RabbitMQ 4 drops a quorum message handed out 20 times (no dead-letter exchange on a parking queue).
      for (let shown = 0; shown < 25; shown++) expect(await parked.show(errorQueue, id)).toMatchObject({ id, body: '{"n":1}' });
    } finally {
      await cleanUp(() => parked.close());
    }
    await waitFor(async () => (await broker.count(errorQueue)) === 1, 'the message still parked');
    const [message] = await broker.take(errorQueue, 1);
    expect(Number(headersOf(message)['x-delivery-count'] ?? 0)).toBeLessThan(12);
  });
});
