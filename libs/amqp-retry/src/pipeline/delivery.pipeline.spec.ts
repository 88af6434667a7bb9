import type { ConsumeMessage } from 'amqplib';
import { of, throwError } from 'rxjs';
import { resolveHandlerConfig } from '../core/config/handler.config.js';
import { resolveModuleConfig } from '../core/config/module.config.js';
import type { Settle } from '../amqp/queue.consumer.js';
import type { HandlerInvoker } from './delivery.contracts.js';
import { DeliveryPipeline } from './delivery.pipeline.js';
import type { MessageParker, TierRouter } from './park-route.steps.js';

const logger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
const message = {
  content: Buffer.from('{"id":1}'),
  properties: { messageId: 'm-1', headers: {} },
  fields: { routingKey: 'orders', exchange: '', deliveryTag: 1, redelivered: false },
} as unknown as ConsumeMessage;

/** Runs one delivery through a pipeline whose handler call is `invoke`, and answers how it was settled. */
async function outcomeOf(invoke: HandlerInvoker): Promise<string[]> {
  const outcome: string[] = [];
  const settle: Settle = { ack: () => outcome.push('ack'), nack: (requeue) => outcome.push(requeue ? 'requeue' : 'nack') };
  const tiers = {
    ready: async () => true,
    route: async (_m: ConsumeMessage, s: Settle) => (outcome.push('tier'), s.nack(false)),
  } as unknown as TierRouter;
  const parker = { park: async () => void outcome.push('park') } as unknown as MessageParker;
  const config = resolveHandlerConfig({ queue: 'orders', delays: ['1s'] }, resolveModuleConfig({}, {}), 'A.b');
  const pipeline = new DeliveryPipeline({
    config,
    invoke,
    parker,
    park: { errorQueue: 'orders.error', redeclare: async () => undefined },
    tiers,
    logger,
  });
  await pipeline.handle(message, settle, new AbortController().signal);
  return outcome;
}

describe('the delivery pipeline', () => {
  it('acks a call that resolves, and one whose Observable answer completes', async () => {
    expect(await outcomeOf(async () => 'done')).toEqual(['ack']);
    expect(await outcomeOf(async () => of(1, 2))).toEqual(['ack']);
  });

  it('sends a call that rejects, or whose Observable answer errors, on to its tier', async () => {
    expect(await outcomeOf(async () => Promise.reject(new Error('down')))).toEqual(['tier', 'nack']);
    expect(await outcomeOf(async () => throwError(() => new Error('down')))).toEqual(['tier', 'nack']);
  });

  it('parks a body it cannot read without calling the handler', async () => {
    let called = false;
    const unreadable = { ...message, content: Buffer.from('{not json') } as ConsumeMessage;
    const outcome: string[] = [];
    const settle: Settle = { ack: () => outcome.push('ack'), nack: () => outcome.push('nack') };
    const parker = { park: async () => void outcome.push('park') } as unknown as MessageParker;
    const config = resolveHandlerConfig({ queue: 'orders' }, resolveModuleConfig({}, {}), 'A.b');
    const tiers = {} as TierRouter;
    const invoke: HandlerInvoker = async () => void (called = true);
    const pipeline = new DeliveryPipeline({
      config,
      invoke,
      parker,
      park: { errorQueue: 'orders.error', redeclare: async () => undefined },
      tiers,
      logger,
    });
    await pipeline.handle(unreadable, settle, new AbortController().signal);
    expect({ called, outcome }).toEqual({ called: false, outcome: ['park'] });
  });
});
