import type { Channel, ConsumeMessage } from 'amqplib';
import { AckBatcher, type Unsettled } from './ack.batcher.js';

/** A channel that records its settlements as text (`ack 3`, `ack 5 multiple`, `nack 4 requeue`), or throws when told. */
function recordingChannel() {
  const sent: string[] = [];
  let failing: Error | undefined;
  const channel = {
    ack: (message: ConsumeMessage, multiple = false) => {
      if (failing) throw failing;
      sent.push(`ack ${message.fields.deliveryTag}${multiple ? ' multiple' : ''}`);
    },
    nack: (message: ConsumeMessage, _allUpTo: boolean, requeue: boolean) => {
      if (failing) throw failing;
      sent.push(`nack ${message.fields.deliveryTag}${requeue ? ' requeue' : ''}`);
    },
  };
  return { channel: channel as unknown as Channel, sent, fail: (error: Error) => (failing = error) };
}

const delivery = (tag: number): Unsettled => ({ message: { fields: { deliveryTag: tag } } as ConsumeMessage, ready: false });
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('AckBatcher', () => {
  it("sends one turn's acks as one multiple ack up to the newest, on the next turn", async () => {
    const { channel, sent } = recordingChannel();
    const batcher = new AckBatcher(channel, () => undefined);
    const deliveries = [1, 2, 3].map(delivery);
    for (const d of deliveries) batcher.delivered(d);
    for (const d of deliveries) batcher.ack(d);
    expect(sent).toEqual([]);
    await nextTurn();
    expect(sent).toEqual(['ack 3 multiple']);
  });

  it('acks a lone delivery singly, and those behind one still in flight one by one', async () => {
    const { channel, sent } = recordingChannel();
    const batcher = new AckBatcher(channel, () => undefined);
    const [first, second, third] = [1, 2, 3].map(delivery);
    for (const d of [first, second, third]) batcher.delivered(d);
    batcher.ack(first);
    batcher.ack(third);
    await nextTurn();
    expect(sent).toEqual(['ack 1', 'ack 3']);
    batcher.ack(second);
    await nextTurn();
    expect(sent).toEqual(['ack 1', 'ack 3', 'ack 2']);
  });

  it('nacks at once and leaves the nacked delivery out of the next multiple ack', async () => {
    const { channel, sent } = recordingChannel();
    const batcher = new AckBatcher(channel, () => undefined);
    const deliveries = [1, 2, 3].map(delivery);
    for (const d of deliveries) batcher.delivered(d);
    batcher.nack(deliveries[1], false);
    expect(sent).toEqual(['nack 2']);
    batcher.ack(deliveries[0]);
    batcher.ack(deliveries[2]);
    await nextTurn();
    expect(sent).toEqual(['nack 2', 'ack 3 multiple']);
  });

  it('never covers a delivery held unhandled with a multiple ack', async () => {
    const { channel, sent } = recordingChannel();
    const batcher = new AckBatcher(channel, () => undefined);
    const [held, a, b] = [7, 8, 9].map(delivery);
    for (const d of [held, a, b]) batcher.delivered(d);
    batcher.ack(a);
    batcher.ack(b);
    await nextTurn();
    expect(sent).toEqual(['ack 8', 'ack 9']);
  });

  it('sends waiting acks on flush (before a close), then nothing more on the scheduled turn', async () => {
    const { channel, sent } = recordingChannel();
    const batcher = new AckBatcher(channel, () => undefined);
    const deliveries = [1, 2].map(delivery);
    for (const d of deliveries) batcher.delivered(d);
    for (const d of deliveries) batcher.ack(d);
    batcher.flush();
    expect(sent).toEqual(['ack 2 multiple']);
    await nextTurn();
    expect(sent).toEqual(['ack 2 multiple']);
  });

  it('hands a settlement the closed channel refused to onDropped, and goes on', async () => {
    const { channel, sent, fail } = recordingChannel();
    const dropped: unknown[] = [];
    const batcher = new AckBatcher(channel, (error) => dropped.push(error));
    const [a, b] = [1, 2].map(delivery);
    batcher.delivered(a);
    batcher.delivered(b);
    fail(new Error('Channel closed'));
    batcher.nack(a, true);
    batcher.ack(b);
    await nextTurn();
    expect(sent).toEqual([]);
    expect(dropped.map((e) => (e as Error).message)).toEqual(['Channel closed', 'Channel closed']);
  });
});
