import { jest } from '@jest/globals';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ConsumeMessage } from 'amqplib';
import { throwError } from 'rxjs';
import { resolveHandlerConfig, type HandlerConfig } from '../core/config/handler.config.js';
import { resolveModuleConfig } from '../core/config/module.config.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import type { IdempotencyStore } from '../core/idempotency/idempotency.store.js';
import { partitionConfigs } from '../core/partitions/partition.plan.js';
import { HandlerTimeoutError } from '../errors/handler-timeout.error.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { DeliveryRecalled, linkRecall } from '../core/delivery/delivery.recall.js';
import { ANSWERED, answeringUnread, type RequestOutcome, type RetryPolicy } from '../pipeline/delivery.contracts.js';
import { RetriedInPlace } from '../pipeline/in-place.retry.js';
import { deliveryChain, handlerChain, handlerStepNames, routedChain } from './delivery.chain.js';
import type { MessageParker, TierRouter } from '../pipeline/park-route.steps.js';
import { QueueFlowControl } from './queue-flow.control.js';
import { ObserverHub } from '../core/observe/observer.hub.js';

const logger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
const store: IdempotencyStore = {
  claim: async () => 'claimed',
  renew: async () => true,
  release: async () => undefined,
  markHandled: async () => undefined,
} as unknown as IdempotencyStore;
/** A store that says what it is asked into `calls` ('claim', 'release', 'record'). */
const trackingStore = (calls: string[]): IdempotencyStore =>
  ({
    ...store,
    claim: async () => (calls.push('claim'), 'claimed'),
    release: async () => void calls.push('release'),
    markHandled: async () => void calls.push('record'),
  }) as unknown as IdempotencyStore;
const configOf = (options: object): HandlerConfig => resolveHandlerConfig({ queue: 'orders', ...options }, resolveModuleConfig({}, {}), 'A.b');
const partsOf = (config: HandlerConfig) => ({ config, logger, flow: new QueueFlowControl(config, { logger }) });
const message = (headers: Record<string, unknown> = {}) =>
  ({
    content: Buffer.from('{}'),
    properties: { messageId: 'm-1', headers },
    fields: { routingKey: 'k', exchange: 'e', deliveryTag: 1 },
  }) as unknown as ConsumeMessage;
const contextOf = (m: ConsumeMessage, attempt = 1): RetryContext => ({
  attempt,
  maxAttempts: 3,
  isLastAttempt: false,
  queue: 'orders',
  message: m,
  deaths: [],
  signal: new AbortController().signal,
});

describe('the handler chain', () => {
  // One row per configuration: the steps that run around the call, outermost first.
  it.each<[string, object, string[]]>([
    ['nothing configured', {}, []],
    ['a time limit', { timeout: '5s' }, ['time limit']],
    ['a circuit breaker', { circuitBreaker: true }, ['breaker']],
    ['a rate limit (a gate on the delivery, nothing around the call)', { rateLimit: { calls: 5, per: '1s' } }, []],
    ['idempotency and a time limit', { idempotency: { store }, timeout: '1s' }, ['idempotency', 'hand-over', 'time limit']],
    ['ordering', { ordering: { key: { header: 'x-key' } } }, ['ordering', 'hand-over']],
    [
      'ordering, idempotency, a breaker and a time limit',
      { ordering: { key: { header: 'x-key' } }, idempotency: { store }, circuitBreaker: true, timeout: '1s' },
      ['ordering', 'idempotency', 'breaker', 'hand-over', 'time limit'],
    ],
  ])('with %s runs %j', (_name, options, steps) => {
    expect(handlerStepNames(partsOf(configOf(options)))).toEqual(steps);
  });

  it('a routed queue always bounds the call by each delivery’s own limit', () => {
    expect(handlerStepNames({ ...partsOf(configOf({})), policyOf: () => configOf({}) })).toEqual(['time limit']);
  });

  it('calls the steps in the stated order: ordering waits, idempotency claims, then the call', async () => {
    const calls: string[] = [];
    const config = configOf({ ordering: { key: { header: 'x-key' } }, idempotency: { store: trackingStore(calls) } });
    const invoke = handlerChain(partsOf(config), async () => void calls.push('call'));
    await invoke({}, contextOf(message({ 'x-key': 'a' })));
    expect(calls).toEqual(['claim', 'call', 'record']);
  });

  it('the steps see a call end once its Observable answer is read: one that errors is no success to record', async () => {
    const calls: string[] = [];
    const config = configOf({ idempotency: { store: trackingStore(calls) } });
    const invoke = handlerChain(
      partsOf(config),
      answeringUnread(async () => throwError(() => new Error('down'))),
    );
    await expect(invoke({}, contextOf(message()))).rejects.toThrow('down');
    expect(calls).toEqual(['claim', 'release']);
  });

  it('without steps, the call is the handler itself', () => {
    const call = async () => undefined;
    expect(handlerChain(partsOf(configOf({})), call)).toBe(call);
  });

  it("a routed delivery's time limit is its route's", async () => {
    const config = configOf({});
    const slow = async () => new Promise((resolve) => setTimeout(resolve, 200));
    const policy: RetryPolicy = { maxAttempts: 2, delaysMs: [5], isRetryable: () => true, timeoutMs: 20 };
    const { router, invoke } = routedChain(partsOf(config), (payload) => ({ kind: 'handle', payload, policy, invoke: slow }));
    const m = message();
    expect(router({}, m, []).kind).toBe('handle');
    await expect(invoke({}, contextOf(m))).rejects.toBeInstanceOf(HandlerTimeoutError);
  });
});

describe('the handler chain of a partition', () => {
  it('orders by key and hands the call over: a partition handed to another instance takes back what waits for its key', () => {
    const [partition] = partitionConfigs(configOf({ exchange: 'e', partitions: { count: 2, key: { header: 'x-key' } } }));
    expect(handlerStepNames(partsOf(partition))).toEqual(['ordering', 'hand-over']);
  });
});

describe('the routed chain on a partition that retries in place', () => {
  const [partition] = partitionConfigs(
    resolveHandlerConfig(
      { queue: 'q', exchange: 'e', delays: ['1s'], maxAttempts: 5, partitions: { count: 1, key: { header: 'x-key' }, whileRetrying: 'hold' } },
      resolveModuleConfig(),
      'the RetryServer',
    ),
  );

  it("counts the attempts and waits the delays of the route's own policy, not the queue's", async () => {
    const policy: RetryPolicy = { maxAttempts: 2, delaysMs: [5], isRetryable: () => true };
    const attempts: number[] = [];
    const failing = async (_payload: unknown, context: RetryContext) => {
      attempts.push(context.attempt);
      throw new Error('down');
    };
    const { router, invoke } = routedChain(partsOf(partition), () => ({ kind: 'handle', payload: {}, policy, invoke: failing }));
    const m = message({ 'x-key': 'k' });
    expect(router({}, m, []).kind).toBe('handle');
    const started = Date.now();
    const failure = await invoke({}, { ...contextOf(m), maxAttempts: 2, queue: 'q.p0' }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RetriedInPlace);
    expect((failure as RetriedInPlace).attempt).toBe(2);
    expect(attempts).toEqual([1, 2]); // the queue's 5 attempts and 1 s delay would still be waiting
    expect(Date.now() - started).toBeLessThan(500);
  });
});

describe('a partition handed over', () => {
  it('lets the running call finish, its signal untouched, and settles it; what waits for its key or to retry in place gives up unsettled', async () => {
    const [partition] = partitionConfigs(
      configOf({ exchange: 'e', delays: ['10s'], maxAttempts: 5, partitions: { count: 1, key: { header: 'x-key' }, whileRetrying: 'hold' } }),
    );
    const calls: number[] = [];
    const settled: string[] = [];
    let endFirst!: () => void;
    let firstSignal!: AbortSignal;
    const invoke = async (payload: unknown, context: RetryContext) => {
      const { n } = payload as { n: number };
      calls.push(n);
      if (n === 1) {
        firstSignal = context.signal;
        await new Promise<void>((resolve) => (endFirst = resolve));
        throw new NonRetryableError('a business refusal'); // parked: settled as usual
      }
      if (n === 3) throw new Error('down'); // retried in place, after 10 s
    };
    const handle = deliveryChain({
      config: partition,
      invoke,
      flow: new QueueFlowControl(partition, { logger }),
      parker: { park: async (_m: ConsumeMessage, s: { ack(): void }) => s.ack() } as unknown as MessageParker,
      park: { errorQueue: 'orders.error', redeclare: async () => undefined },
      tiers: {} as TierRouter,
      logger,
    });
    // The consumer's two signals: the channel's, and its recall, which a hand-over aborts alone.
    const channel = new AbortController();
    const recall = new AbortController();
    linkRecall(channel.signal, recall.signal);
    const delivered = (n: number, key: string) =>
      ({
        ...message({ 'x-key': key }),
        content: Buffer.from(JSON.stringify({ n })),
        fields: { routingKey: 'k', exchange: 'e', deliveryTag: n },
      }) as ConsumeMessage;
    const settle = (n: number) => ({ ack: () => settled.push(`ack ${n}`), nack: (requeue: boolean) => settled.push(`nack ${n} ${requeue}`) });
    const deliveries = [delivered(1, 'a'), delivered(2, 'a'), delivered(3, 'b')].map((m, i) => handle(m, settle(i + 1), channel.signal));
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([1, 3]); // 2 waits for key a, 3 for its retry in place
    recall.abort(new DeliveryRecalled(partition.queue, 'the queue is handed over to another consumer'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(firstSignal.aborted).toBe(false);
    endFirst();
    await Promise.all(deliveries);
    expect({ calls, settled, aborted: firstSignal.aborted }).toEqual({ calls: [1, 3], settled: ['ack 1'], aborted: false });
  });
});

describe('attempts retried in place', () => {
  it('are each observed as an attempt through a tier: failed and retried, then the next attempt in a scope of its own', async () => {
    const [partition] = partitionConfigs(
      configOf({ exchange: 'e', delays: ['5ms', '10ms'], maxAttempts: 3, partitions: { count: 1, key: { header: 'x-key' }, whileRetrying: 'hold' } }),
    );
    const scope = new AsyncLocalStorage<number>();
    const seen: string[] = [];
    const observers = new ObserverHub(
      [
        {
          deliveryStarted: (e) => (seen.push(`started ${e.attempt}/${e.maxAttempts}`), { run: (fn) => scope.run(e.attempt, fn) }),
          handled: (e) => void seen.push(`handled ${e.attempt}`),
          failed: (e) => void seen.push(`failed ${e.attempt} tier ${e.retryTier} after ${e.retryDelayMs}`),
        },
      ],
      logger,
    );
    observers.count({
      countHandled: () => void seen.push('counted handled'),
      countFailed: (_queue, _ms, _error, retried) => void seen.push(`counted failed, retried ${retried}`),
    });
    const handle = deliveryChain({
      config: partition,
      invoke: async (payload: unknown, context: RetryContext) => {
        seen.push(`call ${context.attempt} in scope ${scope.getStore()}`);
        if (context.attempt < (payload as { succeedAt: number }).succeedAt) throw new Error(`down ${context.attempt}`);
      },
      flow: new QueueFlowControl(partition, { logger }),
      parker: { park: async (_m: ConsumeMessage, s: { ack(): void }) => (seen.push('parked'), s.ack()) } as unknown as MessageParker,
      park: { errorQueue: 'orders.error', redeclare: async () => undefined },
      tiers: {} as TierRouter,
      logger,
      observers,
    });
    const delivered = (succeedAt: number) =>
      ({ ...message({ 'x-key': 'a' }), content: Buffer.from(JSON.stringify({ succeedAt })) }) as ConsumeMessage;
    const settle = { ack: () => void seen.push('ack'), nack: (requeue: boolean) => void seen.push(`nack ${requeue}`) };
    await handle(delivered(3), settle, new AbortController().signal);
    const retried = [
      'started 1/3',
      'call 1 in scope 1',
      'failed 1 tier 1 after 5',
      'counted failed, retried true',
      'started 2/3',
      'call 2 in scope 2',
      'failed 2 tier 2 after 10',
      'counted failed, retried true',
      'started 3/3',
      'call 3 in scope 3',
    ];
    expect(seen.splice(0)).toEqual([...retried, 'handled 3', 'counted handled', 'ack']);
    // Every attempt spent: the last one's failure parks it, as the last attempt through a tier would.
    await handle(delivered(4), settle, new AbortController().signal);
    expect(seen).toEqual([...retried, 'failed 3 tier undefined after undefined', 'counted failed, retried false', 'parked', 'ack']);
  });
});

describe('requests and parks of a routed queue, under a pause and a breaker', () => {
  it('a pause while a request runs, or while a delivery is parked unread, takes neither back: each is settled once, here', async () => {
    const config = configOf({ ordering: { key: { header: 'x-key' } } }); // something waits before the handler
    const flow = new QueueFlowControl(config, { logger });
    const settled: string[] = [];
    let endRequest!: () => void;
    let endPark!: () => void;
    const parker = {
      park: (_m: ConsumeMessage, settle: { ack(): void }) => new Promise<void>((resolve) => (endPark = resolve)).then(() => settle.ack()),
    } as unknown as MessageParker;
    const handle = deliveryChain({
      config,
      invoke: async () => undefined,
      router: (payload) =>
        (payload as { request?: boolean }).request
          ? { kind: 'once', run: () => new Promise<RequestOutcome>((resolve) => (endRequest = () => resolve(ANSWERED))) }
          : { kind: 'park', reason: 'no-handler', error: new Error('no handler for this pattern') },
      flow,
      parker,
      park: { errorQueue: 'orders.error', redeclare: async () => undefined },
      tiers: {} as TierRouter,
      logger,
    });
    const delivered = (n: number, body: object) =>
      ({ ...message(), content: Buffer.from(JSON.stringify(body)), fields: { routingKey: 'k', exchange: 'e', deliveryTag: n } }) as ConsumeMessage;
    const settle = (n: number) => ({ ack: () => settled.push(`ack ${n}`), nack: (requeue: boolean) => settled.push(`nack ${n} ${requeue}`) });
    const signal = new AbortController().signal;
    const request = handle(delivered(1, { request: true }), settle(1), signal);
    const parked = handle(delivered(2, { pattern: 'unknown' }), settle(2), signal);
    await new Promise((resolve) => setImmediate(resolve));
    flow.pause('ops');
    endRequest();
    endPark();
    await Promise.all([request, parked]);
    expect(settled.sort()).toEqual(['ack 1', 'ack 2']);
  });

  it('a request answered in a half-open circuit closes it: requests alone do not leave it half-open', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const config = configOf({ delays: ['1s'], circuitBreaker: { consecutiveFailures: 1, openFor: '1s', halfOpenCalls: 1 } });
      const flow = new QueueFlowControl(config, { logger });
      const handle = deliveryChain({
        config,
        invoke: async () => undefined,
        router: (payload) =>
          (payload as { request?: boolean }).request
            ? { kind: 'once', run: async () => ANSWERED }
            : { kind: 'handle', payload, policy: config, invoke: async () => Promise.reject(new Error('503')) },
        flow,
        parker: {} as MessageParker,
        park: { errorQueue: 'orders.error', redeclare: async () => undefined },
        tiers: {
          ready: async () => true,
          route: async (_m: ConsumeMessage, s: { nack(requeue: boolean): void }) => s.nack(false),
        } as unknown as TierRouter,
        logger,
      });
      const delivered = (body: object) => ({ ...message(), content: Buffer.from(JSON.stringify(body)) }) as ConsumeMessage;
      const settle = { ack: () => undefined, nack: () => undefined };
      const signal = new AbortController().signal;
      await handle(delivered({ event: 1 }), settle, signal); // its failure opens the circuit
      expect(flow.status().circuit).toBe('open');
      jest.advanceTimersByTime(1_000);
      expect(flow.status().circuit).toBe('half-open');
      await handle(delivered({ request: true }), settle, signal);
      expect(flow.status()).toMatchObject({ state: 'running', circuit: 'closed' });
    } finally {
      jest.useRealTimers();
    }
  });
});
