import type { ConsumeMessage } from 'amqplib';
import { resolveHandlerConfig } from '../core/config/handler.config.js';
import { resolveModuleConfig } from '../core/config/module.config.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { partitionConfigs } from '../core/partitions/partition.plan.js';
import type { RetryPolicy } from './delivery.contracts.js';
import { guaranteedRoutes } from './delivery.pipeline.js';
import { RetriedInPlace } from './in-place.retry.js';

const logger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
const [partition] = partitionConfigs(
  resolveHandlerConfig(
    { queue: 'q', exchange: 'e', delays: ['1s'], maxAttempts: 5, partitions: { count: 1, key: { header: 'x-key' }, whileRetrying: 'hold' } },
    resolveModuleConfig(),
    'the RetryServer',
  ),
);

describe('guaranteedRoutes on a partition that retries in place', () => {
  it("counts the attempts and waits the delays of the route's own policy, not the queue's", async () => {
    const policy: RetryPolicy = { maxAttempts: 2, delaysMs: [5], isRetryable: () => true };
    const attempts: number[] = [];
    const invoke = async (_payload: unknown, context: RetryContext) => {
      attempts.push(context.attempt);
      throw new Error('down');
    };
    const route = guaranteedRoutes(partition, () => ({ kind: 'handle', payload: {}, policy, invoke }), logger);
    const message = {
      content: Buffer.from('{}'),
      properties: { headers: { 'x-key': 'k' } },
      fields: { routingKey: 'p', exchange: 'e' },
    } as unknown as ConsumeMessage;
    const chosen = route({}, message, []);
    if (chosen.kind !== 'handle') throw new Error('expected a handled route');
    const context = { attempt: 1, maxAttempts: 2, isLastAttempt: false, queue: 'q.p0', message, deaths: [], signal: new AbortController().signal };
    const started = Date.now();
    const failure = await chosen.invoke({}, context).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RetriedInPlace);
    expect((failure as RetriedInPlace).attempt).toBe(2);
    expect(attempts).toEqual([1, 2]); // the queue's 5 attempts and 1 s delay would still be waiting
    expect(Date.now() - started).toBeLessThan(500);
  });
});
