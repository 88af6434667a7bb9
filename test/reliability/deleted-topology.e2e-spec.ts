import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { exchangeExists, waitFor } from '../support/broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { SUITE_OPTIONS, useSuite } from '../support/suite.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { retryTopologyNames } from 'nestjs-amqp-retry';

const MESSAGES = 20;
const DELAYS_MS = [200];

describe('an operator deletes a queue or exchange the library owns; no message is lost', () => {
  const suite = useSuite('e2e.deleted');

  /**
   * Starts a handler that fails each message on attempt 1 and succeeds on attempt 2, deletes something with `remove`,
   * publishes MESSAGES messages, and waits until every id was handled successfully or parked, and `restored()` holds.
   */
  async function failOnceAfter(remove: () => Promise<unknown>, restored: () => Promise<boolean>) {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, delays: DELAYS_MS, maxAttempts: 3 }, (_, ctx) => {
      if (ctx.attempt === 1) throw new Error('first attempt fails');
    });
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    const logger = new RecordingLogger();
    suite.app.useLogger(logger);
    await remove();
    for (let id = 0; id < MESSAGES; id++) await broker.publish('', queue, { id });

    const calls = handlerOf(suite.app, Handler).calls;
    const handled = () => new Set(calls.filter((c) => c.attempt >= 2).map((c) => (c.payload as { id: number }).id));
    const parked = new Set<number>();
    const accounted = async () => {
      if (await broker.exists(`${queue}.error`)) {
        for (const message of await broker.drain(`${queue}.error`)) parked.add((JSON.parse(message.content.toString()) as { id: number }).id);
      }
      return new Set([...handled(), ...parked]).size === MESSAGES && (await restored());
    };
    await waitFor(accounted, 'every id handled or parked, and the topology back', 15_000).catch(() => undefined);
    const ids = [...new Set([...handled(), ...parked])].sort((a, b) => a - b);
    return { ids, logger };
  }

  it('declares a deleted first tier queue again, and every message is handled or parked', async () => {
    const { broker, queue } = suite;
    const [tier] = retryTopologyNames(queue, { delays: DELAYS_MS }).tiers;
    const { ids, logger } = await failOnceAfter(
      () => broker.channel.deleteQueue(tier),
      () => broker.exists(tier),
    );

    expect({ accounted: ids.length, tierExists: await broker.exists(tier) }).toEqual({ accounted: MESSAGES, tierExists: true });
    expect(ids).toEqual(Array.from({ length: MESSAGES }, (_, id) => id));
    expect(logger.lines.some((line) => line.includes(tier))).toBe(true); // the library says it declared the tier again
    expect(await broker.count(queue)).toBe(0);
  });

  it('declares a deleted dead-letter exchange again, and every message is handled or parked', async () => {
    const { broker, queue } = suite;
    const { ids } = await failOnceAfter(
      () => broker.channel.deleteExchange(`${queue}.dlx`),
      () => exchangeExists(`${queue}.dlx`),
    );

    expect({ accounted: ids.length, exchangeExists: await exchangeExists(`${queue}.dlx`) }).toEqual({ accounted: MESSAGES, exchangeExists: true });
    expect(ids).toEqual(Array.from({ length: MESSAGES }, (_, id) => id));
    expect(await broker.count(queue)).toBe(0);
  });

  it('does not consume its queue re-created by someone else without the dead-letter exchange, and takes it back once declared as configured', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, delays: DELAYS_MS, maxAttempts: 1 }, () => {
      throw new Error('fails');
    });
    const proxy = await new TcpProxy().start();
    suite.afterThis(() => proxy.stop());
    suite.app = await startApp([Handler], { ...SUITE_OPTIONS, url: proxy.url, reconnect: { initialDelay: '50ms', maxDelay: '200ms' } });
    const logger = new RecordingLogger();
    suite.app.useLogger(logger);
    // The library's check after the cancel waits until the queue is back, with plain arguments: a failure nacked there would be lost.
    proxy.stall();
    await broker.channel.deleteQueue(queue);
    await broker.channel.assertQueue(queue, { durable: true });
    proxy.resume();
    await broker.publish('', queue, { id: 1 });
    const calls = handlerOf(suite.app, Handler).calls;
    const refusals = () => logger.lines.filter((line) => line.includes('Could not resume consuming')).length;
    await waitFor(() => calls.length > 0 || refusals() >= 2, 'a handler call, or two refused resumptions');

    expect({
      calls: calls.length,
      consumers: await broker.consumers(queue),
      ready: await broker.count(queue),
      told: logger.lines.some((line) => line.includes("refuses the handler's arguments")),
    }).toEqual({ calls: 0, consumers: 0, ready: 1, told: true });

    await broker.channel.deleteQueue(queue); // the operator removes the impostor: the library declares its own again
    await waitFor(async () => (await broker.consumers(queue)) === 1, 'the handler queue consumed again');
    await broker.publish('', queue, { id: 2 });
    const [parked] = await broker.take(`${queue}.error`, 1);
    expect(JSON.parse(parked.content.toString())).toEqual({ id: 2 });
  });
});
