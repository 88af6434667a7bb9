import type { INestApplicationContext } from '@nestjs/common';
import { RetryEngine, type RetryHandlerOptions } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { usePartitionSuite } from '../support/partitions.js';
import { TcpProxy } from '../support/tcp-proxy.js';

type Step = { key: string; seq: number };

/**
 * A quorum queue counts every return of an unsettled message (x-delivery-count), whether a crash or a hand-over made
 * it: a partition's message held in place through hand-overs must not reach the redelivery limit, nor its key's later
 * one waiting behind it; a message whose handler really takes its process down still does.
 */
describe('partition hand-overs and the redelivery limit (quorum)', () => {
  const suite = usePartitionSuite('e2e.handover', 1);
  const options = (): RetryHandlerOptions => ({
    queue: suite.queue,
    queueType: 'quorum',
    delays: ['300ms'],
    maxAttempts: 1_000,
    partitions: { count: 1, key: { header: 'x-key' }, whileRetrying: 'hold', heartbeat: '200ms' },
  });
  const publish = (step: Step) =>
    suite.broker.publish(suite.queue, 'any', step, { headers: { 'x-key': step.key }, messageId: `${step.key}-${step.seq}` });

  it('twelve hand-overs of a message held in place, each to a new instance: neither it nor the one behind it is parked, and both run in order', async () => {
    let failing = true;
    const calls: Array<Step & { app: number; deliveryCount: unknown; failed: boolean }> = [];
    const make = (app: number) =>
      handlerFor(options(), (payload, context) => {
        const step = payload as Step;
        const failed = step.seq === 0 && failing;
        calls.push({ ...step, app, deliveryCount: context.message.properties.headers?.['x-delivery-count'], failed });
        if (failed) throw new Error('held in place');
      });
    const apps: INestApplicationContext[] = [];
    const start = async (app: number) => {
      const started = await startApp([make(app)], { ...TEST_OPTIONS, shutdownTimeout: '2s' });
      apps.push(started);
      suite.apps.push(started);
    };
    await start(0);
    await publish({ key: 'k', seq: 0 });
    await publish({ key: 'k', seq: 1 });
    await waitFor(() => calls.some((c) => c.app === 0), 'the first owner holds the message', 10_000);
    for (let app = 1; app <= 12; app++) {
      await start(app);
      const leaving = apps.shift() as INestApplicationContext;
      await leaving.close(); // hands the partition over (at once, or it went to the newcomer when it joined)
      suite.apps.splice(suite.apps.indexOf(leaving), 1);
      await waitFor(() => calls.some((c) => c.app === app), `instance ${app} holds the message`, 15_000);
    }
    expect(Number(calls.at(-1)?.deliveryCount)).toBeGreaterThanOrEqual(12); // the broker counted every hand-over
    failing = false;
    await waitFor(() => calls.some((c) => c.seq === 1), 'the key goes on', 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a settle window: nothing else is parked
    expect(await suite.broker.count(`${suite.queue}.p0.error`)).toBe(0);
    const handled = calls.filter((c) => !c.failed).map((c) => c.seq);
    expect(handled).toEqual([0, 1]);
    expect(await suite.broker.count(`${suite.queue}.p0`)).toBe(0);
  });

  it('a single-active-consumer queue whose handler takes its process down, or outlives each hand-over, still parks it redelivery-limit after 10 deliveries', async () => {
    const proxy = await new TcpProxy().start();
    try {
      const queue = `${suite.queue}.sac`;
      suite.afterThis(() => suite.broker.deleteRetryTopology(queue));
      const Handler = handlerFor({ queue, queueType: 'quorum', singleActiveConsumer: true }, () => new Promise(() => undefined)); // hangs, as if crashing
      const app = await startApp([Handler], {
        ...TEST_OPTIONS,
        url: proxy.url,
        reconnect: { initialDelay: '20ms', maxDelay: '50ms' },
        shutdownTimeout: '50ms',
      });
      suite.apps.push(app);
      await suite.broker.publish('', queue, { id: 'poison' }, { messageId: 'poison' });
      const calls = handlerOf(app, Handler).calls;
      for (let delivery = 1; delivery <= 10; delivery++) {
        await waitFor(() => calls.length === delivery, `delivery ${delivery}`, 15_000);
        if (delivery % 2 === 0) {
          // A pause hands the queue over: the handler still runs when the channel closes, so its return is counted.
          app.get(RetryEngine).pause(queue, { by: 'test' });
          await waitFor(async () => (await suite.broker.consumers(queue)) === 0, 'the hand-over', 5_000);
          app.get(RetryEngine).resume(queue, { by: 'test' });
        } else {
          await proxy.cut(); // never settled: the quorum queue counts it
          await proxy.restore();
        }
      }
      const [parked] = await suite.broker.take(`${queue}.error`, 1, 20_000);
      expect(calls).toHaveLength(10);
      expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'redelivery-limit' });
    } finally {
      for (const app of suite.apps.splice(0)) await app.close();
      await proxy.stop();
    }
  });
});
