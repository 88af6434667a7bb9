import { Injectable, Module } from '@nestjs/common';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { connectBroker } from '../amqp/broker.connector.js';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

/** The handler's calls, in order: which message, when (harness time, ms), at which attempt. */
const calls: Array<{ id: string; at: number; attempt: number; redelivered: boolean }> = [];
let clock: () => number = () => 0;

@Injectable()
class KeyedHandler {
  @RetryWithBackoff({
    queue: 'harness.hold-suspect',
    exchange: 'harness.hs',
    routingKey: 'k',
    delays: ['30s'],
    maxAttempts: 3,
    queueType: 'quorum',
    prefetch: 10,
    ordering: { key: { header: 'x-key' }, whileRetrying: 'hold' },
  })
  async handle(body: { id: string }, ctx: RetryContext): Promise<void> {
    calls.push({ id: body.id, at: clock(), attempt: ctx.attempt, redelivered: ctx.message.fields.redelivered });
    if (body.id === 'M1' && ctx.attempt === 1) throw new Error('M1 fails once');
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [KeyedHandler] })
class KeyedModule {}

describe('the test harness: a quorum queue under an ordering hold, and crash suspects of another instance', () => {
  let harness: RetryHarness;
  let onClose = async (): Promise<void> => undefined;

  beforeAll(async () => {
    harness = await RetryHarness.start(KeyedModule);
    clock = () => harness.elapsed;
  });
  afterAll(async () => {
    await onClose();
    await harness.close();
  });

  it('handles the suspects and new keys at once, beside a message waiting for its key; the retry still runs before it', async () => {
    const publish = (id: string, key: string) => harness.publish('harness.hs', 'k', { id }, { headers: { 'x-key': key } });
    publish('M1', 'K');
    await harness.advance('100ms');
    publish('M2', 'K'); // waits behind M1's hold (its retry comes back in 30 s)
    await harness.advance('100ms');
    // Another instance takes some messages and loses its channel: they come back counted as delivered, suspects.
    const other = await connectBroker('amqp://guest:guest@127.0.0.1');
    onClose = () => other.close();
    const channel = await other.createChannel();
    await channel.prefetch(5);
    await channel.consume('harness.hold-suspect', () => undefined, { noAck: false });
    for (let i = 0; i < 4; i++) publish(`S${i}`, `s${i}`);
    await harness.advance('100ms');
    await channel.close();
    const lost = harness.elapsed;
    await harness.advance('1s');
    publish('N1', 'n1');
    publish('N2', 'n2');
    const published = harness.elapsed;
    await harness.advance('2s');
    // Suspects come back redelivered and run (each alone) within moments; new keys run after them, not after the tier.
    const suspects = calls.filter((c) => c.redelivered);
    expect(suspects.length).toBeGreaterThan(0);
    for (const s of suspects) expect(s.at - lost).toBeLessThan(1_000);
    for (const id of ['N1', 'N2']) expect(calls.find((c) => c.id === id)?.at ?? Infinity).toBeLessThan(published + 1_000);
    await harness.advance('40s');
    await harness.settle();
    const keyed = calls.filter((c) => c.id === 'M1' || c.id === 'M2').map((c) => `${c.id}.${c.attempt}`);
    expect(keyed).toEqual(['M1.1', 'M1.2', 'M2.1']);
  });
});
