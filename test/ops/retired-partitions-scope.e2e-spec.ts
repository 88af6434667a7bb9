import { NonRetryableError, ParkedMessages, RetryEngine, type RetryHandlerOptions } from 'nestjs-amqp-retry';
import { handlerFor, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { usePartitionSuite } from '../support/partitions.js';

/** After a smaller partitions.count, the parking queues of the partitions beyond it stay in the application's view. */
describe("an application's parked messages in the partitions it retired", () => {
  const suite = usePartitionSuite('e2e.parts.retired', 8);

  const options = (count: number): RetryHandlerOptions => ({
    queue: suite.queue,
    delays: ['200ms'],
    partitions: { count, key: { header: 'x-key' }, heartbeat: '200ms' },
  });
  const parkedIn = async (from: number, to: number) => {
    let sum = 0;
    for (let i = from; i < to; i++) sum += (await suite.broker.count(`${suite.queue}.p${i}.error`)) ?? 0;
    return sum;
  };

  it('lists them in the injected ParkedMessages and replays from them, until they are deleted', async () => {
    // Eight partitions park every message (non-retryable); 40 keys spread over all of them.
    const failing = await startApp(
      [
        handlerFor(options(8), () => {
          throw new NonRetryableError('refused');
        }),
      ],
      TEST_OPTIONS,
    );
    suite.app = failing;
    await waitFor(
      () =>
        failing
          .get(RetryEngine)
          .partitions()[0]
          .partitions.every((p) => p.consuming),
      'all partitions taken',
      5_000,
    );
    for (let i = 0; i < 40; i++) await suite.broker.publish(suite.queue, '', { i }, { headers: { 'x-key': `k${i}` } });
    await waitFor(async () => (await parkedIn(0, 8)) === 40, '40 parked', 15_000);
    suite.app = undefined;
    await failing.close();
    // An operator deletes the first of the partitions the smaller count retires before the others: the rest are still found.
    await suite.broker.deleteRetryTopology(`${suite.queue}.p4`);
    const retiredParked = await parkedIn(5, 8);
    expect(retiredParked).toBeGreaterThan(0);

    // Four partitions: p5..p7 are retired; their parked messages are still this application's to see and replay.
    const calls: number[] = [];
    suite.app = await startApp([handlerFor(options(4), (payload) => void calls.push((payload as { i: number }).i))], TEST_OPTIONS);
    const parked = suite.app.get(ParkedMessages);
    const listed = (await parked.queues()).map((q) => [q.queue, q.errorQueue, q.parked]);
    expect(listed.map(([queue]) => queue)).not.toContain(`${suite.queue}.p4`);
    for (let i = 5; i < 8; i++) {
      expect(listed).toContainEqual([
        `${suite.queue}.p${i}`,
        `${suite.queue}.p${i}.error`,
        (await suite.broker.count(`${suite.queue}.p${i}.error`)) as number,
      ]);
    }
    const retired = Array.from({ length: 3 }, (_, i) => `${suite.queue}.p${i + 5}.error`);
    const withParked = [];
    for (const errorQueue of retired) if (((await suite.broker.count(errorQueue)) ?? 0) > 0) withParked.push(errorQueue);
    const page = await parked.list({ errorQueue: withParked[0] });
    expect(page.total).toBe(await suite.broker.count(withParked[0]));
    let replayed = 0;
    for (const errorQueue of withParked) replayed += (await parked.replay({ errorQueue })).replayed;
    expect(replayed).toBe(retiredParked);
    // Replayed into their retired partition, moved from there into the hash exchange, handled under the new count.
    await waitFor(() => calls.length === retiredParked, 'the replayed messages handled', 15_000);
    expect(await parkedIn(5, 8)).toBe(0);

    // Deleted once empty: they leave the view.
    for (let i = 5; i < 8; i++) await suite.broker.deleteRetryTopology(`${suite.queue}.p${i}`);
    expect((await parked.queues()).map((q) => q.queue)).toEqual([0, 1, 2, 3].map((i) => `${suite.queue}.p${i}`));
  });
});
