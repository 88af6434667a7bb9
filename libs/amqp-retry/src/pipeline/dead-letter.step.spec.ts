import type { ConsumeMessage, Options } from 'amqplib';
import { ObserverHub } from '../core/observe/observer.hub.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { DeadLetterStep } from './dead-letter.step.js';
import type { MessageParker, ParkDetails, ParkTarget } from './park-route.steps.js';

const death = (queue: string, reason: string) => ({ queue, reason, count: 1, exchange: 'shop', 'routing-keys': ['order.created'] });
const deadLetter = (queue: string, reason: string): ConsumeMessage =>
  ({
    content: Buffer.from('{}'),
    fields: { exchange: `${queue}.dlx`, routingKey: 'order.created' },
    properties: { headers: { 'x-first-death-queue': queue, 'x-first-death-reason': reason, 'x-death': [death(queue, reason)] } },
  }) as unknown as ConsumeMessage;

function setup(onExpired: 'park' | 'drop', queues = ['orders'], others: readonly string[] = []) {
  const parks: Array<{ target: ParkTarget; details: ParkDetails }> = [];
  const published: Array<{ exchange: string; routingKey: string; options: Options.Publish }> = [];
  const publisher = {
    publish: async (exchange: string, routingKey: string, _content: Buffer, options: Options.Publish) =>
      void published.push({ exchange, routingKey, options }),
  };
  const parker = {
    publisher,
    park: async (_m: unknown, _s: unknown, target: ParkTarget, details: ParkDetails) => void parks.push({ target, details }),
  };
  const lines: string[] = [];
  const logger = { log: () => undefined, warn: (line: string) => lines.push(line), error: () => undefined, debug: () => undefined } as RetryLogger;
  const dropped: string[] = [];
  const observers = new ObserverHub([{ dropped: (e) => dropped.push(`${e.queue}:${e.reason}`) }], logger);
  let now = 0;
  const targets = new Map(
    queues.map((q) => [q, { errorQueue: `${q}.error`, firstTier: `${q}.retry.1.1s.abc123`, redeclare: async () => undefined }]),
  );
  const targetOf = (q: string) => ({ errorQueue: `${q}.error`, firstTier: `${q}.retry.1.1s.abc123`, redeclare: async () => undefined });
  const other = (q: string) => (others.includes(q) ? targetOf(q) : undefined);
  const step = new DeadLetterStep(targets, onExpired, parker as unknown as MessageParker, logger, observers, () => now, other);
  const acks: number[] = [];
  const settle = { ack: () => acks.push(1), nack: () => undefined };
  const handle = (message: ConsumeMessage) => step.handle(message, settle, new AbortController().signal);
  return { parks, published, lines, dropped, acks, handle, advance: (ms: number) => (now += ms) };
}

describe('DeadLetterStep', () => {
  it('parks each message in the parking queue of the queue it died in, with the route of its death there', async () => {
    const { parks, acks, handle } = setup('park', ['acc.p0', 'acc.p1']);
    await handle(deadLetter('acc.p1', 'maxlen'));
    expect(parks).toHaveLength(1);
    expect(parks[0].target.errorQueue).toBe('acc.p1.error');
    expect(parks[0].details).toMatchObject({ queue: 'acc.p1', reason: 'maxlen', deliveredExchange: 'shop', deliveredRoutingKey: 'order.created' });
    expect(acks).toEqual([]); // the parker acks, once the copy is confirmed
  });

  it("parks what died in none of its queues as malformed, in the first queue's parking queue", async () => {
    const { parks, handle } = setup('drop', ['acc.p0', 'acc.p1']);
    await handle(deadLetter('elsewhere', 'expired'));
    expect(parks.map((p) => [p.target.errorQueue, p.details.reason])).toEqual([['acc.p0.error', 'malformed']]);
  });

  it('parks what died in a further queue of its own (a partition of another count) there, with the reason of its death', async () => {
    const { parks, handle } = setup('park', ['acc.p0', 'acc.p1'], ['acc.p4', 'acc']);
    await handle(deadLetter('acc.p4', 'expired'));
    await handle(deadLetter('acc', 'maxlen'));
    await handle(deadLetter('elsewhere', 'expired'));
    expect(parks.map((p) => [p.target.errorQueue, p.details.queue, p.details.reason, p.details.deliveredExchange])).toEqual([
      ['acc.p4.error', 'acc.p4', 'expired', 'shop'],
      ['acc.error', 'acc', 'maxlen', 'shop'],
      ['acc.p0.error', 'acc.p0', 'malformed', undefined],
    ]);
  });

  it('takes the queue of the last death when it is one of its own, else that of the first', async () => {
    const { parks, handle } = setup('park', ['acc.p0', 'acc.p1'], ['acc.p4']);
    const message = deadLetter('acc.p1', 'rejected');
    const headers = message.properties.headers as Record<string, unknown>;
    headers['x-last-death-queue'] = 'acc.p4';
    headers['x-last-death-reason'] = 'expired';
    headers['x-death'] = [death('acc.p4', 'expired'), death('acc.p1', 'rejected')];
    await handle(message);
    expect(parks.map((p) => [p.target.errorQueue, p.details.reason])).toEqual([['acc.p4.error', 'expired']]);
  });

  it("sends a first failure of a further queue of its own on to that queue's first tier", async () => {
    const { published, handle } = setup('park', ['acc.p0'], ['acc.p6']);
    const moved = deadLetter('acc.p6', 'expired');
    (moved.properties.headers as Record<string, unknown>)['x-death'] = [death('acc.p6', 'rejected'), death('acc.p6', 'expired')];
    await handle(moved);
    expect(published.map((p) => p.routingKey)).toEqual(['acc.p6.retry.1.1s.abc123']);
  });

  it("with onExpired: 'drop', acks and tells observers of each, and logs at most once a minute with the count", async () => {
    const { parks, lines, dropped, acks, handle, advance } = setup('drop');
    await handle(deadLetter('orders', 'expired'));
    await handle(deadLetter('orders', 'maxlen'));
    await handle(deadLetter('orders', 'expired'));
    expect({ acks: acks.length, parks: parks.length, dropped }).toEqual({
      acks: 3,
      parks: 0,
      dropped: ['orders:expired', 'orders:maxlen', 'orders:expired'],
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('"orders": dropped 1 message that expired or was pushed out by a length limit');
    advance(60_000);
    await handle(deadLetter('orders', 'maxlen'));
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('dropped 3 messages that expired or were pushed out');
  });

  it('sends a first failure that came for an old expiry on to its first tier, without its death history, and acks once confirmed', async () => {
    const { parks, published, acks, handle } = setup('drop', ['acc.p0', 'acc.p1']);
    const moved = deadLetter('acc.p1', 'expired');
    const headers = moved.properties.headers as Record<string, unknown>;
    headers['x-death'] = [death('acc.p1', 'rejected'), death('acc.p1', 'expired')];
    headers['x-app'] = 'kept';
    await handle(moved);
    expect(parks).toEqual([]);
    expect(acks).toEqual([1]);
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ exchange: '', routingKey: 'acc.p1.retry.1.1s.abc123' });
    expect(published[0].options.headers).toEqual({
      'x-app': 'kept',
      'x-retry-first-failure': 'acc.p1',
      'x-retry-first-exchange': 'shop',
      'x-retry-first-routing-key': 'order.created',
    });
  });
});
