import type { ConsumeMessage } from 'amqplib';
import { AsyncLocalStorage } from 'node:async_hooks';
import { defer, of, throwError } from 'rxjs';
import { resolveHandlerConfig } from '../core/config/handler.config.js';
import { resolveModuleConfig } from '../core/config/module.config.js';
import type { Settle } from '../amqp/queue.consumer.js';
import { ObserverHub } from '../core/observe/observer.hub.js';
import { ANSWERED, answeringUnread, type DeliveryRouter, type HandlerInvoker, type RequestOutcome } from './delivery.contracts.js';
import { DeliveryPipeline } from './delivery.pipeline.js';
import type { MessageParker, TierRouter } from './park-route.steps.js';
import { OwnReturns, returnIdentity } from '../core/delivery/own-returns.ledger.js';

const logger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
const message = {
  content: Buffer.from('{"id":1}'),
  properties: { messageId: 'm-1', headers: {} },
  fields: { routingKey: 'orders', exchange: '', deliveryTag: 1, redelivered: false },
} as unknown as ConsumeMessage;

/** What a pipeline of the spec may be given beyond its handler call. */
interface Extras {
  observers?: ObserverHub;
  returns?: OwnReturns;
  handOver?: (message: ConsumeMessage, signal: AbortSignal) => boolean;
  queueType?: 'classic' | 'quorum';
  router?: DeliveryRouter;
}

/** Runs `delivered` through a pipeline whose handler call is `invoke`, and answers how it was settled. */
async function outcomeOf(invoke: HandlerInvoker, delivered = message, observers?: ObserverHub): Promise<string[]> {
  return outcomeWith(invoke, delivered, { observers });
}

async function outcomeWith(
  invoke: HandlerInvoker,
  delivered: ConsumeMessage,
  { observers, returns, handOver, queueType, router }: Extras,
): Promise<string[]> {
  const outcome: string[] = [];
  const settle: Settle = { ack: () => outcome.push('ack'), nack: (requeue) => outcome.push(requeue ? 'requeue' : 'nack') };
  const tiers = {
    ready: async () => true,
    route: async (_m: ConsumeMessage, s: Settle) => (outcome.push('tier'), s.nack(false)),
  } as unknown as TierRouter;
  const parker = { park: async () => void outcome.push('park') } as unknown as MessageParker;
  const config = resolveHandlerConfig({ queue: 'orders', delays: ['1s'], queueType }, resolveModuleConfig({}, {}), 'A.b');
  const pipeline = new DeliveryPipeline({
    config,
    invoke,
    parker,
    park: { errorQueue: 'orders.error', redeclare: async () => undefined },
    tiers,
    logger,
    observers,
    returns,
    handOver,
    router,
  });
  await pipeline.handle(delivered, settle, new AbortController().signal);
  return outcome;
}

describe('the delivery pipeline', () => {
  it('acks a call that resolves, and one whose unread Observable answer completes', async () => {
    expect(await outcomeOf(async () => 'done')).toEqual(['ack']);
    expect(await outcomeOf(answeringUnread(async () => of(1, 2)))).toEqual(['ack']);
  });

  it('sends a call that rejects, or whose unread Observable answer errors, on to its tier', async () => {
    expect(await outcomeOf(async () => Promise.reject(new Error('down')))).toEqual(['tier', 'nack']);
    expect(await outcomeOf(answeringUnread(async () => throwError(() => new Error('down'))))).toEqual(['tier', 'nack']);
  });

  it('reads an answer once: an invoker that read its own hands on a value, even an Observable one, that is not read again', async () => {
    expect(await outcomeOf(async () => throwError(() => new Error('not read')))).toEqual(['ack']);
  });

  it('fails a call whose answer throws when looked at, as a throw from the handler', async () => {
    // Not a thenable (`then` reads as undefined), so it resolves as the answer; any other property throws.
    const hostile = new Proxy(
      {},
      {
        get: (_target, key) => {
          if (key === 'then') return undefined;
          throw new Error(`no such property: ${String(key)}`);
        },
      },
    );
    expect(await outcomeOf(answeringUnread(async () => hostile))).toEqual(['tier', 'nack']);
  });

  it("reads an Observable answer inside the observers' scope (a trace's span covers what it does)", async () => {
    const span = new AsyncLocalStorage<string>();
    const observers = new ObserverHub([{ deliveryStarted: () => ({ run: (fn) => span.run('consumer span', fn) }) }], logger);
    let seen: string | undefined;
    const answer = defer(() => {
      seen = span.getStore();
      return of('sent');
    });
    expect(
      await outcomeOf(
        answeringUnread(async () => answer),
        message,
        observers,
      ),
    ).toEqual(['ack']);
    expect(seen).toBe('consumer span');
  });

  it("observes a request's handler call as an event's: started in its scope, then handled or failed, counted once", async () => {
    const span = new AsyncLocalStorage<string>();
    const seen: string[] = [];
    const observers = new ObserverHub(
      [
        {
          deliveryStarted: (e) => (
            seen.push(`started ${e.pattern} ${e.attempt}/${e.maxAttempts} request ${e.request}`),
            { run: (fn) => span.run('consumer span', fn) }
          ),
          handled: (e) => void seen.push(`handled ${e.pattern}`),
          failed: (e) => void seen.push(`failed ${e.pattern} ${(e.error as Error).message} tier ${e.retryTier} request ${e.request}`),
        },
      ],
      logger,
    );
    observers.count({
      countHandled: (queue) => void seen.push(`counted handled ${queue}`),
      countFailed: (queue, _ms, _error, retried) => void seen.push(`counted failed ${queue} retried ${retried}`),
    });
    const request =
      (run: () => Promise<RequestOutcome>): DeliveryRouter =>
      () => ({ kind: 'once', pattern: 'sum', run });
    const inScope = async (outcome: RequestOutcome) => (seen.push(`run in ${span.getStore()}`), outcome);
    const answered = await outcomeWith(async () => 'unused', message, { observers, router: request(() => inScope(ANSWERED)) });
    const failed = await outcomeWith(async () => 'unused', message, {
      observers,
      router: request(() => inScope({ answered: false, error: new Error('kaput') })),
    });
    const thrown = await outcomeWith(async () => 'unused', message, { observers, router: request(() => Promise.reject(new Error('lost'))) });
    expect({ answered, failed, thrown }).toEqual({ answered: ['ack'], failed: ['ack'], thrown: ['ack'] });
    expect(seen).toEqual([
      'started sum 1/1 request true',
      'run in consumer span',
      'handled sum',
      'counted handled orders',
      'started sum 1/1 request true',
      'run in consumer span',
      'failed sum kaput tier undefined request true',
      'counted failed orders retried false',
      'started sum 1/1 request true',
      'failed sum lost tier undefined request true',
      'counted failed orders retried false',
    ]);
  });

  it('parks a body it cannot read without calling the handler', async () => {
    let called = false;
    const unreadable = { ...message, content: Buffer.from('{not json') } as ConsumeMessage;
    const outcome = await outcomeOf(async () => void (called = true), unreadable);
    expect({ called, outcome }).toEqual({ called: false, outcome: ['park'] });
  });

  it('settles nothing that a stop took back while it waited: no park, no tier after a failure before the call', async () => {
    const takenBack = () => false;
    const unreadable = { ...message, content: Buffer.from('{not json') } as ConsumeMessage;
    expect(await outcomeWith(async () => 'done', unreadable, { handOver: takenBack })).toEqual([]);
    expect(await outcomeWith(async () => Promise.reject(new Error('claim failed')), message, { handOver: takenBack })).toEqual([]);
    // Handed over: settled as usual.
    expect(await outcomeWith(async () => Promise.reject(new Error('down')), message, { handOver: () => true })).toEqual(['tier', 'nack']);
  });

  it('counts every return the queue made on purpose, read or not, until the message leaves the queue', async () => {
    const returns = new OwnReturns();
    const identity = returnIdentity(message, 'orders');
    const quorum = (count: number) =>
      ({ ...message, properties: { ...message.properties, headers: { 'x-delivery-count': count } } }) as unknown as ConsumeMessage;
    // Ten deliveries each taken back by a stop (recalled while waiting), each read by the decision before it went back.
    for (let count = 1; count <= 10; count++) {
      returns.add(identity);
      const outcome = await outcomeWith(async () => Promise.reject(new Error('recalled')), quorum(count - 1), {
        returns,
        queueType: 'quorum',
        handOver: () => false,
      });
      expect(outcome).toEqual([]);
    }
    // The broker counts ten returns, all of them the queue's own: the handler runs, and the count is forgotten on the ack.
    let calls = 0;
    expect(await outcomeWith(async () => void calls++, quorum(10), { returns, queueType: 'quorum' })).toEqual(['ack']);
    expect({ calls, own: returns.of(identity), empty: returns.isEmpty }).toEqual({ calls: 1, own: 0, empty: true });
  });
});
