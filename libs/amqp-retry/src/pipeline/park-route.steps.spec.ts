import type { ConsumeMessage, Options } from 'amqplib';
import type { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import type { Settle } from '../amqp/queue.consumer.js';
import type { TopologyGuard } from '../amqp/topology.guard.js';
import { ParkedHeader } from '../core/headers/header.names.js';
import { PublishError } from '../errors/publish.error.js';
import { MessageParker, TierRouter } from './park-route.steps.js';

// The outcome steps against a fake confirm publisher, settle and guard: no broker.

interface Published {
  exchange: string;
  routingKey: string;
  options: Options.Publish;
}

/** A confirm publisher whose publishes fail with the errors queued in `failures`, in order, then succeed. */
function fakePublisher(failures: unknown[] = []) {
  const published: Published[] = [];
  const publisher = {
    publish: async (exchange: string, routingKey: string, _content: Buffer, options: Options.Publish) => {
      const failure = failures.shift();
      if (failure) throw failure;
      published.push({ exchange, routingKey, options });
    },
  } as unknown as ConfirmPublisher;
  return { publisher, published };
}

function fakeSettle() {
  const settled: string[] = [];
  const settle: Settle = { ack: () => settled.push('ack'), nack: (requeue: boolean) => settled.push(`nack ${requeue}`) } as Settle;
  return { settle, settled };
}

function recordingLogger() {
  const lines: string[] = [];
  const push = (level: string) => (line: string) => void lines.push(`${level} ${line}`);
  return { logger: { log: push('log'), warn: push('warn'), error: push('error'), debug: push('debug') }, lines };
}

const message = {
  content: Buffer.from('{"id":1}'),
  properties: { messageId: 'm-1', headers: { 'x-tenant': 'eu' } },
  fields: { exchange: 'orders', routingKey: 'order.created', deliveryTag: 7, redelivered: false },
} as unknown as ConsumeMessage;
const signal = () => new AbortController().signal;
const details = { queue: 'orders', deaths: [], reason: 'exhausted' as const, error: new Error('payment declined'), handlerCalls: 3 };

describe('the park step', () => {
  it('publishes the copy to the error queue, with its reason and origin, then acks once, and logs one line', async () => {
    const { publisher, published } = fakePublisher();
    const { settle, settled } = fakeSettle();
    const { logger, lines } = recordingLogger();
    const parker = new MessageParker(publisher, logger);
    await parker.park(message, settle, { errorQueue: 'orders.error', redeclare: async () => undefined }, details, signal());
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ exchange: '', routingKey: 'orders.error' });
    expect(published[0].options.headers).toMatchObject({
      [ParkedHeader.reason]: 'exhausted',
      [ParkedHeader.originalQueue]: 'orders',
      [ParkedHeader.exceptionMessage]: 'payment declined',
      'x-tenant': 'eu',
    });
    expect(settled).toEqual(['ack']);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^warn .*orders.*orders\.error/);
  });

  it('tries a refused publish again while the delivery waits unsettled, declaring a missing queue first; acks once', async () => {
    const missing = new PublishError('', 'orders.error', 'NOT_FOUND - no queue', 404);
    const { publisher, published } = fakePublisher([missing, new Error('channel closed')]);
    const { settle, settled } = fakeSettle();
    const { logger, lines } = recordingLogger();
    let redeclared = 0;
    const redeclare = async () => void redeclared++;
    await new MessageParker(publisher, logger).park(message, settle, { errorQueue: 'orders.error', redeclare }, details, signal());
    expect(published).toHaveLength(1);
    expect(redeclared).toBe(1);
    expect(settled).toEqual(['ack']);
    expect(lines.filter((l) => l.startsWith('error'))).toHaveLength(2);
  }, 10_000);

  it('leaves the delivery unsettled when its channel is gone (the broker redelivers it)', async () => {
    const { publisher } = fakePublisher([new Error('down'), new Error('down'), new Error('down')]);
    const { settle, settled } = fakeSettle();
    const { logger } = recordingLogger();
    const lost = new AbortController();
    const parking = new MessageParker(publisher, logger).park(
      message,
      settle,
      { errorQueue: 'q.error', redeclare: async () => undefined },
      details,
      lost.signal,
    );
    lost.abort();
    await parking;
    expect(settled).toEqual([]);
  });

  it('says nothing of trying again when the copy failed because the delivery is gone', async () => {
    // The publisher gives up on a patient send when its signal aborts: that is no refusal, and nothing is tried again.
    const lost = new AbortController();
    const publisher = {
      publish: async () => {
        lost.abort(new Error('the delivery is gone'));
        throw new PublishError('', 'q.error', 'given up before the broker confirmed it (the delivery is gone)');
      },
    } as unknown as ConfirmPublisher;
    const { settle, settled } = fakeSettle();
    const { logger, lines } = recordingLogger();
    const parker = new MessageParker(publisher, logger);
    await parker.park(message, settle, { errorQueue: 'q.error', redeclare: async () => undefined }, details, lost.signal);
    expect(settled).toEqual([]);
    expect(lines.filter((line) => /trying again/.test(line))).toEqual([]);
  });
});

describe('the tier step', () => {
  const guard = (failures: number) =>
    ({ ensure: async () => (failures-- > 0 ? Promise.reject(new Error('no tier')) : undefined) }) as unknown as TopologyGuard;
  const policy = { maxAttempts: 3, delaysMs: [1_000], isRetryable: () => true };

  it("nacks a failure into the queue's own schedule", async () => {
    const { publisher, published } = fakePublisher();
    const { settle, settled } = fakeSettle();
    const tiers = new TierRouter('orders', publisher, guard(0), async () => undefined, recordingLogger().logger);
    expect(await tiers.ready(signal())).toBe(true);
    await tiers.route(message, settle, policy, 1, signal());
    expect(settled).toEqual(['nack false']);
    expect(published).toEqual([]);
  });

  it("moves a first failure into another schedule's first tier through the dead-letter exchange, then acks; later ones nack", async () => {
    const { publisher, published } = fakePublisher();
    const { settle, settled } = fakeSettle();
    const tiers = new TierRouter('orders', publisher, guard(0), async () => undefined, recordingLogger().logger);
    await tiers.route(message, settle, { ...policy, firstTier: 'orders.retry.1.5s' }, 1, signal());
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ exchange: 'orders.dlx', routingKey: 'orders.retry.1.5s' });
    expect(published[0].options.expiration).toBeUndefined();
    await tiers.route(message, settle, { ...policy, firstTier: 'orders.retry.1.5s' }, 2, signal());
    expect(settled).toEqual(['ack', 'nack false']);
  });

  it('waits for the retry topology with backoff; gives up only when the delivery is gone', async () => {
    const { publisher } = fakePublisher();
    const { logger, lines } = recordingLogger();
    expect(await new TierRouter('orders', publisher, guard(1), async () => undefined, logger).ready(signal())).toBe(true);
    expect(lines).toEqual([expect.stringMatching(/^error "orders": no tier; the failed message waits/)]);
    const gone = new AbortController();
    gone.abort();
    expect(await new TierRouter('orders', publisher, guard(5), async () => undefined, logger).ready(gone.signal)).toBe(false);
  });
});
