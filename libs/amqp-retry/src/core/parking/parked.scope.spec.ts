import { describe, expect, it } from '@jest/globals';
import type { HandlerRecord } from '../topology/handler-registry.record.js';
import {
  describeScope,
  isRecordedParkingQueue,
  nonParkingRole,
  mayUseParkingQueue,
  namesNothing,
  parkingQueueOf,
  queueOfUnnamed,
  queuesInScope,
  replayTargetProblem,
  type ParkedScope,
} from './parked.scope.js';

const record = (queue: string, applications: string[], over: Partial<HandlerRecord> = {}): HandlerRecord => ({
  queue,
  errorQueue: `${queue}.error`,
  tiers: [`${queue}.retry.1`],
  queueType: 'classic',
  applications,
  recordedAt: '',
  ...over,
});

/** Two applications on one vhost, a ladder both share, and a record written before applications were recorded. */
const records = [
  record('a.orders', ['app-a']),
  record('amqp-retry.delay.ready', ['app-b', 'app-a'], { errorQueue: 'amqp-retry.delay.error', tiers: [] }),
  record('b.invoices', ['app-b'], { errorQueue: 'b.parked' }),
  record('old.queue', []),
];
const scope = (over: Partial<ParkedScope>): ParkedScope => ({ named: [], applications: [], wholeVhost: false, ...over });
const names = (s: ParkedScope) => queuesInScope(s, records).map((q) => q.queue);

describe('queuesInScope', () => {
  it("an application's own queues are exactly its engine's, whatever the registry holds", () => {
    const own = [{ queue: 'a.orders', errorQueue: 'a.orders.custom', tiers: ['t'] }];
    expect(queuesInScope(scope({ own }), records)).toEqual(own);
    expect(queuesInScope(scope({ own: [] }), records)).toEqual([]);
  });

  it("an application's recorded queues, the ladder it shares included, and no other's", () => {
    expect(names(scope({ applications: ['app-a'] }))).toEqual(['a.orders', 'amqp-retry.delay.ready']);
    expect(names(scope({ applications: ['app-b'] }))).toEqual(['amqp-retry.delay.ready', 'b.invoices']);
    expect(names(scope({ applications: ['nobody'] }))).toEqual([]);
  });

  it('every recorded queue for the whole vhost, old records included', () => {
    expect(names(scope({ wholeVhost: true }))).toEqual(['a.orders', 'amqp-retry.delay.ready', 'b.invoices', 'old.queue']);
  });

  it('named queues: the parking queue given, else the recorded one, else <queue>.error', () => {
    const named = [{ queue: 'b.invoices' }, { queue: 'old.queue', errorQueue: 'old.parked' }, { queue: 'unrecorded' }];
    expect(queuesInScope(scope({ named }), records).map((q) => [q.queue, q.errorQueue])).toEqual([
      ['b.invoices', 'b.parked'],
      ['old.queue', 'old.parked'],
      ['unrecorded', 'unrecorded.error'],
    ]);
  });
});

describe('parkingQueueOf and mayUseParkingQueue', () => {
  const a = scope({ applications: ['app-a'] });
  const inA = queuesInScope(a, records);

  it("answers for a queue in scope, and refuses another application's queue typed in", () => {
    expect(parkingQueueOf(a, inA, 'a.orders')).toBe('a.orders.error');
    expect(parkingQueueOf(a, inA, 'b.invoices')).toBeUndefined();
    expect(mayUseParkingQueue(a, inA, 'a.orders.error')).toBe(true);
    expect(mayUseParkingQueue(a, inA, 'b.parked')).toBe(false);
    expect(mayUseParkingQueue(a, inA, 'a.orders')).toBe(false); // a business queue is not a parking queue
  });

  it('takes any queue for the whole vhost', () => {
    const all = scope({ wholeVhost: true });
    expect(parkingQueueOf(all, [], 'anything')).toBe('anything.error');
    expect(mayUseParkingQueue(all, [], 'anything.parked')).toBe(true);
  });
});

describe('namesNothing and describeScope', () => {
  it('tells a view given nothing from one given an empty application', () => {
    expect(namesNothing(scope({}))).toBe(true);
    expect(namesNothing(scope({ own: [] }))).toBe(false);
    expect(namesNothing(scope({ applications: ['a'] }))).toBe(false);
  });

  it('says what a view looks at', () => {
    expect(describeScope(scope({ own: [] }))).toBe("this application's handler queues");
    expect(describeScope(scope({ applications: ['app-a'], named: [{ queue: 'q' }] }))).toBe('the queues recorded by "app-a"; the queues named: "q"');
    expect(describeScope(scope({ wholeVhost: true }))).toBe('every handler queue recorded on the vhost');
  });
});

describe('nonParkingRole', () => {
  const own = [{ queue: 'orders', errorQueue: 'orders.error', tiers: ['orders.retry.1', 'orders.retry.2'] }];
  const none: HandlerRecord[] = [];

  it('names a handler queue and its tiers, never its parking queue or an unknown queue', () => {
    expect(nonParkingRole(own, none, 'orders')).toBe('a handler queue or one of its retry tiers');
    expect(nonParkingRole(own, none, 'orders.retry.2')).toBe('a handler queue or one of its retry tiers');
    expect(nonParkingRole(own, none, 'orders.error')).toBeUndefined();
    expect(nonParkingRole(own, none, 'payments')).toBeUndefined();
    expect(nonParkingRole(own, none, 'payments.error')).toBeUndefined();
    expect(nonParkingRole([], none, 'orders')).toBeUndefined();
  });

  it("names the library's own queues, recorded or not: the registry, the ladder's levels, plan records, presence, tiers, dead-letter queues", () => {
    expect(nonParkingRole([], none, 'amqp-retry.handlers')).toBe('the handler registry');
    expect(nonParkingRole([], none, 'amqp-retry.delay.v1.p03.1536ms')).toMatch(/^a queue of a delay ladder/);
    expect(nonParkingRole([], none, 'billing.delay.quorum.v1.p00.7ms')).toMatch(/^a queue of a delay ladder/);
    expect(nonParkingRole([], none, 'gone.retry.plan')).toMatch(/retry plan record/);
    expect(nonParkingRole([], none, 'gone.retry.live.a1b2c3')).toMatch(/presence queue/);
    expect(nonParkingRole([], none, 'gone.retry.2.10s.a1b2c3')).toMatch(/^a retry tier/);
    expect(nonParkingRole([], none, 'gone.dlx.dead')).toMatch(/dead-letter queue/);
    expect(nonParkingRole(own, none, 'orders.dlx.sort')).toBe('a name the retry topology of "orders" derives');
    expect(nonParkingRole(own, none, 'orders.return')).toBe('a name the retry topology of "orders" derives');
    // The ladder's own parking queue, and names that only look alike, are not refused.
    for (const name of ['amqp-retry.delay.error', 'orders.dlxx', 'gone.retry.plan.error', 'amqp-retry.handlers.error']) {
      expect(nonParkingRole(own, none, name)).toBeUndefined();
    }
  });

  it("names a record's handler queue and what it derives, naming the record and what to do", () => {
    const payments = [record('payments', ['billing'], { recordedAt: '2026-01-02T03:04:05.000Z' })];
    const role = nonParkingRole([], payments, 'payments');
    expect(role).toMatch(
      /^the handler queue by the record of "payments" in "amqp-retry.handlers" \(application\(s\) "billing", recorded 2026-01-02T03:04:05.000Z; /,
    );
    expect(role).toMatch(/take it out of the registry/);
    expect(nonParkingRole([], payments, 'payments.dlx.first')).toMatch(
      /^a name the retry topology of "payments" derives by the record of "payments"/,
    );
    expect(nonParkingRole([], payments, 'payments.error')).toBeUndefined();
  });

  it("takes a record's tiers only as far as its own queue derives them: a record cannot claim another application's parking queue", () => {
    const ghost = [record('ghost', ['intruder'], { errorQueue: 'ghost2', tiers: ['orders.error', 'payments.error'] })];
    expect(nonParkingRole(own, ghost, 'orders.error')).toBeUndefined();
    expect(nonParkingRole([], ghost, 'orders.error')).toBeUndefined();
    expect(nonParkingRole([], ghost, 'payments.error')).toBeUndefined();
  });

  it("keeps a parking queue of the application's own handlers one, whatever a record says", () => {
    const claim = [record('orders.error', ['intruder'])];
    expect(nonParkingRole(own, claim, 'orders.error')).toBeUndefined();
    expect(nonParkingRole([], claim, 'orders.error')).toMatch(/^the handler queue by the record of "orders.error" .*"intruder"/);
  });

  it('knows a parking queue by what some handler parks in', () => {
    expect(isRecordedParkingQueue([{ errorQueue: 'orders.error' }], 'orders.error')).toBe(true);
    expect(isRecordedParkingQueue([{ errorQueue: 'orders.error' }], 'payments.error')).toBe(false);
  });
});

describe('queueOfUnnamed', () => {
  const parks = (queue: string, errorQueue = `${queue}.error`) => ({ queue, errorQueue });

  it('is the one queue that parks there, whatever the name', () => {
    expect(queueOfUnnamed('orders.error', [parks('orders')], [])).toBe('orders');
    expect(queueOfUnnamed('shared-dlq', [parks('orders', 'shared-dlq'), parks('payments')], [])).toBe('orders');
  });

  it('is unknown when two queues park there: which one it failed in cannot be told', () => {
    expect(queueOfUnnamed('orders.error', [parks('orders'), parks('orders-v2', 'orders.error')], [])).toBe('');
    expect(queueOfUnnamed('shared-dlq', [parks('orders', 'shared-dlq'), parks('payments', 'shared-dlq')], [])).toBe('');
    expect(queueOfUnnamed('orders.error', [parks('a', 'orders.error'), parks('b', 'orders.error')], [parks('orders')])).toBe('');
  });

  it('is the queue the scope names with that parking queue when no record says who parks there', () => {
    expect(queueOfUnnamed('orders.error', [], [parks('orders')])).toBe('orders');
    expect(queueOfUnnamed('orders.dlq', [], [parks('orders', 'orders.dlq')])).toBe('orders');
    expect(queueOfUnnamed('orders.error', [], [parks('orders', 'orders.dlq')])).toBe('');
    expect(queueOfUnnamed('orders.error', [], [parks('payments')])).toBe('');
    // A record wins over the scope's default name.
    expect(queueOfUnnamed('orders.error', [parks('payments', 'orders.error')], [parks('orders')])).toBe('payments');
  });
});

describe('replayTargetProblem', () => {
  const own = [{ queue: 'a.orders', errorQueue: 'a.orders.error', tiers: ['a.orders.retry.1.100ms.abcdef'] }];
  const scopeOfA: ParkedScope = { own, named: [], applications: ['app-a'], wholeVhost: false };
  const inScope = queuesInScope(scopeOfA, records);
  const problem = (target: string, scope = inScope) => replayTargetProblem(target, { own, records, inScope: scope });

  it('lets a replay go to a handler queue in scope: the own ones, the recorded ones of the application, the delay ladder', () => {
    expect([problem('a.orders'), problem('amqp-retry.delay.ready')]).toEqual([undefined, undefined]);
  });

  it("refuses a queue out of scope: another application's, a business queue", () => {
    expect(problem('b.invoices')).toBe(
      `its queue "b.invoices" (x-original-queue) is not a handler queue this view looks after; no replay goes there (should it be one whose record is gone, name it as the handler queue: the CLI's --queue)`,
    );
    expect(problem('rc.victim')).toMatch(/not a handler queue this view looks after/);
    // The whole vhost has every recorded handler queue in scope, still no business queue.
    const everything = queuesInScope({ named: [], applications: [], wholeVhost: true }, records);
    expect([problem('b.invoices', everything), problem('rc.victim', everything)]).toEqual([undefined, expect.stringMatching(/not a handler queue/)]);
  });

  it('never names a queue of the library, even one a record puts in scope', () => {
    const everything = queuesInScope({ named: [], applications: [], wholeVhost: true }, [...records, record('amq.gen-abc', [])]);
    const refused = (target: string) => problem(target, everything);
    expect(refused('amqp-retry.handlers')).toMatch(/is the handler registry/);
    expect(refused('amq.gen-abc')).toMatch(/a queue the broker named/);
    expect(refused('a.orders.error')).toMatch(/is a parking queue/);
    expect(refused('b.parked')).toMatch(/is a parking queue/);
    expect(refused('a.orders.retry.1.100ms.abcdef')).toMatch(/a retry tier/);
    expect(refused('b.invoices.dlx.dead')).toMatch(/a retry tier or a name the retry topology/);
    expect(refused('amqp-retry.delay.v1.p03.1536ms')).toMatch(/a queue of a delay ladder/);
  });

  it("takes the application's own queue as a target whatever a record says", () => {
    const forged = [...records, record('x', [], { errorQueue: 'a.orders' })];
    expect(replayTargetProblem('a.orders', { own, records: forged, inScope })).toBeUndefined();
  });
});
