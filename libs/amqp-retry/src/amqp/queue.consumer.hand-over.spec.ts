import { recallOf } from '../core/delivery/delivery.recall.js';
import { setUp, turns } from '../testing/queue-consumer.fixture.js';

describe('QueueConsumer hands a queue over', () => {
  it('hands over: no cancel, no new delivery started, the running handler left alone, the channel closed once it returns', async () => {
    const { consumer, log, events, channels, calls } = setUp();
    await consumer.start();
    channels[0].deliver(1);
    const handing = consumer.handOver(5_000);
    expect(calls[0].signal.aborted).toBe(false);
    expect(recallOf(calls[0].signal).aborted).toBe(true); // what waits before a call gives up
    channels[0].deliver(2);
    await turns();
    expect(calls.map((call) => call.tag)).toEqual([1]);
    expect(log.slice(3)).toEqual([]);
    calls[0].settle.ack();
    calls[0].done();
    await handing;
    expect(log.slice(3)).toEqual(['#1 ack 1', '#1 close']);
    expect(events).toEqual(['consumerUp', 'consumerDown: handed over to another consumer']);
    expect(consumer.phase).toBe('stopped');
  });

  it('single active consumer: a hold keeps the subscription until the handler returns, closes, holds on a fresh channel, consumes there on release', async () => {
    const returned: number[] = [];
    const { consumer, log, events, channels, calls } = setUp({ handOverMs: 5_000, returned: (m) => returned.push(m.fields.deliveryTag) });
    await consumer.start();
    channels[0].deliver(1);
    consumer.hold('the queue is paused');
    channels[0].deliver(2); // taken unhandled: the close puts it back in its place
    await turns();
    expect({ calls: calls.map((call) => call.tag), log: log.slice(3), held: consumer.isHeld }).toEqual({ calls: [1], log: [], held: true });
    calls[0].settle.ack();
    calls[0].done();
    await turns();
    expect(log.slice(3)).toEqual(['#1 ack 1', '#1 close', 'redeclare', '#2 open']);
    expect(consumer.phase).toBe('held');
    expect(returned).toEqual([2]); // noted: a quorum queue counts its return, which was no crash
    consumer.release();
    await turns();
    expect(log.slice(7)).toEqual(['#2 prefetch 10', '#2 consume c1']);
    expect(events).toEqual(['consumerUp', 'consumerDown: the queue is paused', 'consumerUp']);
  });

  it('single active consumer: released while handing over, it consumes on the fresh channel at once; a stop hands over too', async () => {
    const { consumer, log, events, channels, calls } = setUp({ handOverMs: 5_000 });
    await consumer.start();
    channels[0].deliver(1);
    consumer.hold('the queue is open');
    consumer.release(2);
    calls[0].done();
    await turns();
    expect(log.slice(3)).toEqual(['#1 close', 'redeclare', '#2 open', '#2 prefetch 2', '#2 consume c1']);
    expect(consumer.phase).toBe('consuming');
    channels[1].deliver(1);
    const stopping = consumer.stop(5_000);
    await turns();
    expect(log.slice(8)).toEqual([]); // no cancel: the next consumer activates only once the channel closes
    calls[1].done();
    await stopping;
    expect(log.slice(8)).toEqual(['#2 close']);
    expect(events.at(-1)).toBe('consumerDown: the application is stopping');
    expect(consumer.phase).toBe('stopped');
  });

  it('a delivery whose handler ends unsettled once recalled (waiting for its key, between attempts in place) is told as returned, and the next owner is told before and after the close', async () => {
    const returned: number[] = [];
    const told = { into: [] as string[] };
    const { consumer, log, channels, calls } = setUp({
      returned: (m) => returned.push(m.fields.deliveryTag),
      handingOver: async () => void told.into.push('told'),
    });
    told.into = log;
    await consumer.start();
    channels[0].deliver(1);
    channels[0].deliver(2);
    channels[0].deliver(3);
    await turns();
    const handing = consumer.handOver(5_000);
    calls[0].done(); // held in place: the recall ended its wait, unsettled
    calls[1].settle.ack(); // handled
    calls[1].done();
    calls[2].done(); // waited for its key, unsettled
    await handing;
    expect(returned).toEqual([1, 3]);
    expect(log.slice(3)).toEqual(['told', '#1 ack 2', '#1 close', 'told']); // before the close, and once after it
  });

  it('a delivery whose channel was lost before its handler ended is not told as returned: its return may be a crash', async () => {
    const returned: number[] = [];
    const { consumer, channels, calls } = setUp({ returned: (m) => returned.push(m.fields.deliveryTag) });
    await consumer.start();
    channels[0].deliver(1);
    await turns();
    const handing = consumer.handOver(5_000);
    channels[0].brokerClose('connection lost');
    await turns();
    calls[0].done();
    await handing;
    expect(returned).toEqual([]);
  });

  it('closes the channel all the same when the note cannot be sent in time, and says so', async () => {
    const { consumer, log, lines, channels, calls } = setUp({ handingOver: () => new Promise<void>(() => undefined) });
    await consumer.start();
    channels[0].deliver(1);
    const handing = consumer.handOver(5_000);
    calls[0].done();
    await handing;
    expect(log.slice(3)).toEqual(['#1 close']);
    expect(lines.filter((line) => line.includes('could not be told'))).toHaveLength(2);
  });
});
