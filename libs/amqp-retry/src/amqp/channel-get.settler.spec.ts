import { EventEmitter } from 'node:events';
import type { Channel, GetMessage } from 'amqplib';
import { getSettled } from './channel-get.settler.js';

/** A channel whose get() the broker began to answer when the connection ended: amqplib never settles it then. */
function channelWith(get: () => Promise<GetMessage | false>): Channel & EventEmitter {
  return Object.assign(new EventEmitter(), { get }) as unknown as Channel & EventEmitter;
}

describe('getSettled', () => {
  it("rejects, naming the queue, when the channel closes while get() waits for the message's frames", async () => {
    const channel = channelWith(() => new Promise<never>(() => undefined));
    const reading = getSettled(channel, 'orders.error');
    channel.emit('close');
    await expect(reading).rejects.toThrow('the channel closed while a message of "orders.error" was being read');
  });

  it("gives get()'s own answer, and leaves no listener behind", async () => {
    const message = { content: Buffer.from('x') } as GetMessage;
    const channel = channelWith(() => Promise.resolve(message));
    await expect(getSettled(channel, 'q')).resolves.toBe(message);
    const empty = channelWith(() => Promise.resolve(false));
    await expect(getSettled(empty, 'q')).resolves.toBe(false);
    expect([channel.listenerCount('close'), empty.listenerCount('close')]).toEqual([0, 0]);
  });

  it("passes get()'s rejection on (a 404 closing the channel)", async () => {
    const channel = channelWith(() => Promise.reject(new Error('NOT_FOUND')));
    await expect(getSettled(channel, 'q')).rejects.toThrow('NOT_FOUND');
    expect(channel.listenerCount('close')).toBe(0);
  });
});
