import type { HandlerRecord } from '../../topology/handler-registry.record.js';
import { MAX_UNKNOWN_QUEUES, RecordedScope, RECORDED_READ_SPACING_MS, UNKNOWN_QUEUE_MS } from './recorded.scope.js';

const record = (queue: string, applications: string[]): HandlerRecord => ({
  queue,
  errorQueue: `${queue}.error`,
  tiers: [],
  queueType: 'classic',
  applications,
  recordedAt: '2026-11-29T00:00:00.000Z',
});

describe('RecordedScope', () => {
  it("knows the application's recorded queues, and a partitioned handler by the name its beats use", () => {
    const scope = new RecordedScope('shop');
    scope.learn(
      [record('orders.p0', ['shop']), record('orders.p1', ['shop']), record('billing', ['shop', 'ops']), record('other', ['ops'])],
      undefined,
      0,
    );
    expect(['orders', 'orders.p0', 'billing', 'other', 'orders.p'].map((q) => scope.has(q))).toEqual([true, true, true, false, false]);
  });

  it('forgets nothing when a later read returns fewer records (or none, when it failed)', () => {
    const scope = new RecordedScope('shop');
    scope.learn([record('worker.q', ['shop'])], undefined, 0);
    scope.learn([], undefined, 10_000);
    expect(scope.has('worker.q')).toBe(true);
  });

  it('reads at most every 5 s, and asks again about a queue no read found only after a minute', () => {
    const scope = new RecordedScope('shop');
    expect(scope.wantsRead('ghost', 0)).toBe(true);
    scope.reading(0);
    expect(scope.wantsRead('ghost', RECORDED_READ_SPACING_MS - 1)).toBe(false);
    scope.learn([record('orders', ['shop'])], 'ghost', 100);
    expect(scope.wantsRead('ghost', RECORDED_READ_SPACING_MS)).toBe(false); // a beat every 5 s would read every 5 s
    expect(scope.wantsRead('new.queue', RECORDED_READ_SPACING_MS)).toBe(true); // a queue not asked about yet
    expect(scope.wantsRead('ghost', 100 + UNKNOWN_QUEUE_MS)).toBe(true);
  });

  it('remembers a bounded number of unknown queues', () => {
    const scope = new RecordedScope('shop');
    for (let i = 0; i <= MAX_UNKNOWN_QUEUES; i++) scope.learn([], `flood.${i}`, 0);
    expect(scope.wantsRead('flood.0', RECORDED_READ_SPACING_MS)).toBe(true); // dropped when the bound was reached
    expect(scope.wantsRead(`flood.${MAX_UNKNOWN_QUEUES}`, RECORDED_READ_SPACING_MS)).toBe(false);
  });
});
