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
});
