import { EventEmitter } from 'node:events';
import type { ConfirmChannel } from 'amqplib';
import { ConfirmWindow, type Outcome } from './confirm.window.js';

/** A channel that holds each publish's confirm callback for the test to settle as amqplib would. */
function fakeChannel() {
  const confirms: ((error: unknown) => void)[] = [];
  const channel = Object.assign(new EventEmitter(), {
    publish: (_exchange: string, _key: string, _content: Buffer, _options: unknown, confirm: (error: unknown) => void) => confirms.push(confirm),
  });
  return { channel: channel as unknown as ConfirmChannel, confirms };
}

describe('ConfirmWindow', () => {
  it('tells a nack from a channel closed before the confirm: the copy of the latter may have been delivered', async () => {
    const { channel, confirms } = fakeChannel();
    const window = new ConfirmWindow(channel);
    const outcomes: Outcome[] = [];
    for (let n = 0; n < 3; n++) await window.publish('q', Buffer.from(`${n}`), {}, (outcome) => outcomes.push(outcome));
    confirms[0](null);
    confirms[1](new Error('message nacked')); // amqplib's nack
    confirms[2](new Error('channel closed')); // amqplib's close, the connection lost
    await window.drain();
    expect(outcomes).toEqual(['routed', 'nacked', 'unconfirmed']);
  });

  it('tells a copy amqplib could not encode (a queue name over 255 bytes), and goes on with those in flight and the next', async () => {
    const { channel, confirms } = fakeChannel();
    const publish = channel.publish.bind(channel);
    channel.publish = (exchange, key, content, options, confirm) => {
      if (Buffer.byteLength(key) > 255) throw new TypeError('Value too long for shortstr');
      return publish(exchange, key, content, options, confirm);
    };
    const window = new ConfirmWindow(channel, 3);
    const outcomes: [string, Outcome][] = [];
    for (const queue of ['a', 'q'.repeat(300), 'b', 'c'])
      await window.publish(queue, Buffer.from(queue), {}, (outcome) => outcomes.push([queue.slice(0, 3), outcome]));
    confirms.forEach((confirm) => confirm(null));
    await window.drain();
    expect(outcomes).toEqual([
      ['qqq', 'unsent'],
      ['a', 'routed'],
      ['b', 'routed'],
      ['c', 'routed'],
    ]);
  });
});
