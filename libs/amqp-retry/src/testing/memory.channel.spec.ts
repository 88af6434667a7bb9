import type { PublishRecord } from './memory.channel.js';
import { MemoryBroker } from './memory.broker.js';
import { MemoryConnection } from './memory.connection.js';
import { VirtualClock } from './virtual.clock.js';

/** A confirm channel on a broker of its own; `refuse` says which publishes are nacked. */
async function confirmChannel(refuse: (record: PublishRecord) => boolean = () => false) {
  const broker = new MemoryBroker(new VirtualClock(0));
  const connection = new MemoryConnection(broker, refuse, '4.1.0');
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue('q');
  return { connection, channel };
}

describe("the in-memory confirm channel's waitForConfirms", () => {
  it('resolves once every publish is acked', async () => {
    const { channel } = await confirmChannel();
    channel.publish('', 'q', Buffer.from('a'));
    channel.publish('', 'q', Buffer.from('b'));
    await expect(channel.waitForConfirms()).resolves.toBeUndefined();
  });

  it('rejects when a publish since the last wait was nacked, and the next wait, with nothing nacked, resolves', async () => {
    const { channel } = await confirmChannel((record) => record.content.toString() === 'refused');
    channel.publish('', 'q', Buffer.from('fine'));
    channel.publish('', 'q', Buffer.from('refused'));
    await expect(channel.waitForConfirms()).rejects.toThrow('message nacked');
    channel.publish('', 'q', Buffer.from('fine'));
    await expect(channel.waitForConfirms()).resolves.toBeUndefined();
  });

  it('rejects, then and on every later wait, when the channel closed with publishes unconfirmed', async () => {
    const { connection, channel } = await confirmChannel();
    channel.publish('', 'q', Buffer.from('a'));
    const waiting = channel.waitForConfirms();
    connection.lose();
    await expect(waiting).rejects.toThrow('channel closed');
    await expect(channel.waitForConfirms()).rejects.toThrow('channel closed');
  });
});

describe("the in-memory confirm channel's mandatory publishes", () => {
  it('a queue at its length limit with reject-publish nacks the second without returning it; one routed nowhere is returned', async () => {
    const records: PublishRecord[] = [];
    const { channel } = await confirmChannel((record) => records.push(record) < 0);
    await channel.assertQueue('full', { arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' } });
    const returned: string[] = [];
    channel.on('return', (message: { content: Buffer }) => returned.push(message.content.toString()));
    const answers: string[] = [];
    const answer = (name: string) => (error: unknown) => answers.push(`${name} ${error ? 'nack' : 'ack'}`);
    channel.publish('', 'full', Buffer.from('first'), { mandatory: true }, answer('first'));
    channel.publish('', 'full', Buffer.from('second'), { mandatory: true }, answer('second'));
    channel.publish('', 'nowhere', Buffer.from('unroutable'), { mandatory: true }, answer('unroutable'));
    await expect(channel.waitForConfirms()).rejects.toThrow('message nacked');
    expect(answers).toEqual(['first ack', 'second nack', 'unroutable ack']);
    expect(returned).toEqual(['unroutable']);
    expect(records.map((r) => [r.content.toString(), r.confirmed, r.returned])).toEqual([
      ['first', true, false],
      ['second', false, false],
      ['unroutable', true, true],
    ]);
  });
});
