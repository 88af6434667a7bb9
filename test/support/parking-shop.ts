import type { Options } from 'amqplib';
import { NonRetryableError } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, type Call } from './app.js';
import { uniqueName, waitFor } from './broker.js';
import type { Suite } from './suite.js';

/** The routing key of the shop's messages. */
const KEY = 'order.created';

/**
 * For the tests of parked messages, per test: a topic exchange `exchange` and a queue `sibling` bound to it with the
 * key of the suite's handler queue (what a replay sends must reach the handler queue only, never the sibling), both
 * deleted with the test's topology; `errorQueue`, the suite queue's parking queue.
 */
export interface ParkingShop {
  exchange: string;
  sibling: string;
  errorQueue: string;
  /** While true (each test begins so), the handler fails each message with an `error`. */
  failing: boolean;
  /** Declares the exchange and the sibling, and starts the suite's app: a handler on its queue, bound by the key. */
  start(options?: { maxAttempts?: number; delays?: number[] }): Promise<{ calls: Call[] }>;
  /** Publishes `bodies` to the exchange, waits until `parkedCount` are parked and the sibling has its copies, which it empties. */
  park(bodies: (object | Buffer)[], parkedCount?: number): Promise<void>;
}

/**
 * The shop of a suite: `exchangePrefix` names its exchanges, `publish` is the properties of what `park` publishes.
 * A message whose handler fails is parked at once (NonRetryableError), or after `maxAttempts` when given.
 */
export function useParkingShop(suite: Suite, exchangePrefix: string, publish: Options.Publish = {}): ParkingShop {
  const shop: ParkingShop = {
    exchange: '',
    sibling: '',
    errorQueue: '',
    failing: true,
    async start(options = {}) {
      const { broker, queue } = suite;
      const Handler = handlerFor(
        { queue, exchange: shop.exchange, routingKey: KEY, delays: options.delays ?? [100], maxAttempts: options.maxAttempts },
        (payload) => {
          const { error } = payload as { error?: string };
          if (shop.failing && error) throw options.maxAttempts ? new Error(error) : new NonRetryableError(error);
        },
      );
      await broker.channel.assertExchange(shop.exchange, 'topic', { durable: true });
      await broker.declareQueue(shop.sibling, { exchange: shop.exchange, key: KEY });
      suite.app = await startApp([Handler]);
      return handlerOf(suite.app, Handler);
    },
    async park(bodies, parkedCount = bodies.length) {
      const { broker } = suite;
      for (const body of bodies) await broker.publish(shop.exchange, KEY, body, publish);
      await waitFor(async () => (await broker.count(shop.errorQueue)) === parkedCount, `${parkedCount} parked`, 30_000);
      await waitFor(async () => (await broker.count(shop.sibling)) === bodies.length, 'the sibling copies', 30_000);
      await broker.drain(shop.sibling);
    },
  };
  beforeEach(() => {
    shop.exchange = uniqueName(exchangePrefix);
    shop.sibling = `${suite.queue}.sibling`;
    shop.errorQueue = `${suite.queue}.error`;
    shop.failing = true;
    suite.extraQueues.push(shop.sibling);
    suite.extraExchanges.push(shop.exchange);
  });
  return shop;
}
