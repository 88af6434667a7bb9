import { Inject, Injectable, Module, type OnModuleDestroy } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RetryModule, RetryWithBackoff, type RetryContext } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

/**
 * app.close(): consumers stop and handlers in flight finish and are acked. The module is global, and Nest destroys
 * global modules last, so this must happen before any other module's onModuleDestroy: a handler must never use a
 * pool its module closed.
 */
describe('shutdown', () => {
  const suite = useSuite('e2e.shutdown');

  it('lets app.close() finish a handler in flight and ack it; nothing is left behind', async () => {
    const { broker, queue } = suite;
    let finished = false;
    const Slow = handlerFor({ queue }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      finished = true;
    });
    const app = await startApp([Slow]);
    await broker.publish('', queue, { id: 2 });
    await waitFor(() => handlerOf(app, Slow).calls.length === 1, 'the handler to start');
    await app.close();
    expect(finished).toBe(true);
    expect(await broker.count(queue)).toBe(0);
  });
  /** A user module with a resource closed on destroy, and a handler that uses it after a pause. */
  function build(events: string[]) {
    @Injectable()
    class Pool implements OnModuleDestroy {
      closed = false;
      async query(id: number): Promise<void> {
        if (this.closed) throw new Error('pool closed');
        events.push(`query ${id}`);
      }
      onModuleDestroy(): void {
        this.closed = true;
        events.push('pool destroyed');
      }
    }

    @Module({ providers: [Pool], exports: [Pool] })
    class PoolModule {}

    @Module({ imports: [PoolModule], exports: [PoolModule] })
    class FeatureModule {}

    @Injectable()
    class Handler {
      readonly started: number[] = [];
      @RetryWithBackoff({ queue: suite.queue, delays: ['50ms'], maxAttempts: 2, prefetch: 5 })
      async handle(payload: { id: number }, _ctx: RetryContext): Promise<void> {
        this.started.push(payload.id);
        events.push(`start ${payload.id}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
        await this.pool.query(payload.id);
        events.push(`done ${payload.id}`);
      }
      constructor(@Inject(Pool) private readonly pool: Pool) {}
    }
    return { FeatureModule, Handler };
  }

  it.each([
    ['listed before the user module', true],
    ['listed after the user module', false],
  ])('stops consuming and finishes handlers before the user module closes its pool (RetryModule %s)', async (_, retryFirst) => {
    const { broker, queue } = suite;
    const events: string[] = [];
    const { FeatureModule, Handler } = build(events);
    const retry = RetryModule.forRoot({ ...TEST_OPTIONS, shutdownTimeout: '5s' });
    const moduleRef = await Test.createTestingModule({
      imports: retryFirst ? [retry, FeatureModule] : [FeatureModule, retry],
      providers: [Handler],
    }).compile();
    moduleRef.useLogger(false);
    const app = await moduleRef.init();
    for (let id = 0; id < 20; id++) await broker.publish('', queue, { id });
    const handler = app.get(Handler);
    await waitFor(() => handler.started.length >= 5, 'handlers in flight');
    await app.close();

    const destroyedAt = events.indexOf('pool destroyed');
    expect(destroyedAt).toBeGreaterThan(-1);
    const started = events.filter((e) => e.startsWith('start '));
    const done = events.filter((e) => e.startsWith('done '));
    expect(done).toHaveLength(started.length); // every handler that started finished, none with 'pool closed'
    expect(events.slice(destroyedAt + 1)).toEqual([]); // nothing ran after the pool closed
    expect(await broker.count(`${queue}.error`)).toBe(0); // none parked over the shutdown
    expect((await broker.count(queue))! + done.length).toBe(20); // the rest stayed in the queue
  });
});
