import { EventEmitter } from 'node:events';
import type { AmqpConnection } from './amqp-connection.js';
import { ConfirmPublisher } from './confirm.publisher.js';

type Callback = (error: unknown) => void;

/** A confirm channel that answers every publish with `answer` (undefined: an ack) on the next turn. */
class FakeChannel extends EventEmitter {
  readonly published: string[] = [];
  closed = false;

  constructor(private readonly answer: () => Error | undefined) {
    super();
  }

  publish(_exchange: string, routingKey: string, _content: Buffer, _options: unknown, callback: Callback): boolean {
    this.published.push(routingKey);
    setImmediate(() => callback(this.answer()));
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.emit('close');
  }
}

/** A connection that is up and hands out the channels of `answers`, one per createConfirmChannel. */
function connectionWith(answers: (() => Error | undefined)[]) {
  const channels: FakeChannel[] = [];
  const connection = {
    isConnected: true,
    createConfirmChannel: async () => {
      const channel = new FakeChannel(answers[channels.length] ?? (() => undefined));
      channels.push(channel);
      return channel;
    },
  } as unknown as AmqpConnection;
  return { connection, channels };
}

const limits = { timeoutMs: 2_000, bufferSize: 10, confirmTimeoutMs: 500 };

describe('ConfirmPublisher after a nack', () => {
  it('rejects the nacked publish and sends the next one on a fresh channel, closing the old one later', async () => {
    // 3.10: a channel that first published to a quorum queue during its leader election nacks every later publish.
    const { connection, channels } = connectionWith([() => new Error('message nacked'), () => undefined]);
    const publisher = new ConfirmPublisher(connection, limits);
    await expect(publisher.publish('', 'q', Buffer.from('1'), { mandatory: false })).rejects.toThrow('the broker nacked it');
    await publisher.publish('', 'q', Buffer.from('2'), { mandatory: false });
    expect(channels.map((channel) => channel.published)).toEqual([['q'], ['q']]);
    expect(channels[0].closed).toBe(false); // its other publishes may still be settling
    const deadline = Date.now() + 3_000; // closed after confirmTimeout (500 ms here)
    while (!channels[0].closed && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(channels[0].closed).toBe(true);
    await publisher.close();
  });

  it('keeps using a channel that confirms', async () => {
    const { connection, channels } = connectionWith([() => undefined]);
    const publisher = new ConfirmPublisher(connection, limits);
    for (const n of [1, 2, 3]) await publisher.publish('', 'q', Buffer.from(String(n)), { mandatory: false });
    expect(channels).toHaveLength(1);
    await publisher.close();
  });
});
