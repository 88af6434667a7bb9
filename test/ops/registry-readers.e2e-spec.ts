import { NonRetryableError, ParkedMessages } from 'nestjs-amqp-retry';
import { handlerFor, startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

/**
 * The handler registry is read whole and unacked, so a reader would see it empty while another process read it (an
 * operator's page or CLI listing no queues while an application starts, or while another operator looks) were reads
 * and starts not to take turns. They do (an exclusive queue as the lock): every one of many readers at once sees the
 * application.
 */
describe('the handler registry read by many processes at once', () => {
  const suite = useSuite('e2e.registry.readers');
  let application: string;

  beforeEach(async () => {
    const { broker, queue } = suite;
    application = uniqueName('registry-app');
    const Handler = handlerFor({ queue, delays: [100] }, () => {
      throw new NonRetryableError('refused');
    });
    suite.app = await startApp([Handler], { ...TEST_OPTIONS, application });
    await broker.publish('', queue, { n: 1 });
    await waitFor(async () => (await broker.count(`${queue}.error`)) === 1, 'the message parked');
  }, 60_000);

  it('gives every one of eight concurrent readers (separate connections) the application’s queue, five rounds running', async () => {
    const readers = await Promise.all(Array.from({ length: 8 }, () => ParkedMessages.connect({ url: AMQP_URL, application })));
    try {
      const seen: string[][] = [];
      for (let round = 0; round < 5; round++) {
        const lists = await Promise.all(readers.map(async (reader) => (await reader.queues()).map((q) => `${q.queue}:${q.parked}`)));
        seen.push(...lists.map((list) => list.sort()));
      }
      expect(seen).toHaveLength(40);
      expect(seen.filter((list) => list.join() !== `${suite.queue}:1`)).toEqual([]);
    } finally {
      await Promise.all(readers.map((reader) => reader.close()));
    }
    // the lock is gone once every reader is done: it never outlives its holder
    await waitFor(async () => !(await suite.broker.exists('amqp-retry.handlers.lock')), 'the lock released');
  });
});
