import { readFileSync } from 'node:fs';
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { TopologyMismatchError } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { moveQueue } from '../support/move-queue.js';
import { redisKind, uniqueSpace } from '../support/stores.js';
import { useSuite } from '../support/suite.js';

/**
 * docs/migration.md, "Moving a live queue", followed step by step: a queue of a hand-made dead-letter/TTL retry
 * (the blog-post recipe, and what @golevelup/nestjs-rabbitmq users declare through queueOptions) holds messages, some
 * of them waiting in its retry queue, while a publisher keeps sending; the guide's steps move all of it to a
 * library-managed queue.
 */
describe('migrating a live queue to a library-managed one', () => {
  let model: ChannelModel | undefined;
  let channel: ConfirmChannel;
  const suite = useSuite('e2e.migrate.orders', { afterAll: () => model?.close().catch(() => undefined) });

  beforeAll(async () => {
    model = await amqp.connect(AMQP_URL);
    channel = await model.createConfirmChannel();
  });

  /**
   * The hand-made recipe: `queue` dead-letters failures to `<queue>.wait` (a TTL queue), which sends them back by name.
   * Its queues and exchanges are deleted after the test.
   */
  async function declareRecipe(exchange: string, queue: string) {
    const deadLetters = `${queue}.dead-letters`;
    const wait = `${queue}.wait`;
    suite.extraQueues.push(queue, wait);
    suite.extraExchanges.push(deadLetters, exchange);
    await channel.assertExchange(exchange, 'topic', { durable: true });
    await channel.assertExchange(deadLetters, 'direct', { durable: true });
    await channel.assertQueue(queue, { durable: true, deadLetterExchange: deadLetters, deadLetterRoutingKey: wait });
    await channel.assertQueue(wait, { durable: true, messageTtl: 60_000, deadLetterExchange: '', deadLetterRoutingKey: queue });
    await channel.bindQueue(queue, exchange, 'order.created');
    await channel.bindQueue(wait, deadLetters, wait);
    return { deadLetters, wait };
  }

  it('a start on the recipe queue itself fails with TopologyMismatchError naming the argument, and changes nothing there', async () => {
    const { broker, queue } = suite;
    const exchange = uniqueName('e2e.migrate.x');
    await declareRecipe(exchange, queue);
    await broker.publish(exchange, 'order.created', { id: 1 }, { messageId: 'kept' });
    const Handler = handlerFor({ queue, exchange, routingKey: 'order.created', delays: [100] }, () => undefined);
    const failure = await startApp([Handler], TEST_OPTIONS).then(
      async (app) => (await app.close(), undefined),
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(TopologyMismatchError);
    expect((failure as Error).message).toMatch(
      new RegExp(`^The queue "${queue}" already exists on the broker with different arguments \\(inequivalent arg 'x-dead-letter-exchange'`),
    );
    expect(await broker.count(queue)).toBe(1);
  });

  it('the guide steps move every waiting and every live message to the new queue: none lost, each handled once', async () => {
    const { broker, queue: oldQueue } = suite;
    const exchange = uniqueName('e2e.migrate.x');
    const newQueue = `${oldQueue}.v2`;
    const space = uniqueSpace();
    suite.afterThis(() => redisKind.cleanUp(space));
    const { wait } = await declareRecipe(exchange, oldQueue);
    let publishing = true;
    let live = 0;
    const publisher = (async () => {
      while (publishing) {
        const id = `live-${live++}`;
        await broker.publish(exchange, 'order.created', { id }, { messageId: id });
        await new Promise((resolve) => setTimeout(resolve, 5)); // a steady trickle, about 100 a second here
      }
    })();
    suite.afterThis(async () => {
      publishing = false;
      await publisher.catch(() => undefined);
    });
    // Step 4, after the test: the suite deletes the new queue's topology, the old queues and the recipe's exchanges.
    suite.retryQueue(newQueue);
    // Before: 30 messages waiting, 6 of them failed once and sit in the recipe's retry queue; no consumer.
    for (let i = 0; i < 30; i++) await broker.publish(exchange, 'order.created', { id: `old-${i}` }, { messageId: `old-${i}` });
    await waitFor(async () => ((await broker.count(oldQueue)) ?? 0) >= 30, 'the 30 waiting messages');
    for (let i = 0; i < 6; i++) {
      const failed = await channel.get(oldQueue);
      if (failed) channel.nack(failed, false, false);
    }
    await waitFor(async () => (await broker.count(wait)) === 6, '6 messages in the retry queue');

    // Step 1: the new handler on a new queue name, same exchange and routing key, idempotency on for the move.
    const Handler = handlerFor(
      { queue: newQueue, exchange, routingKey: 'order.created', delays: [100], idempotency: { store: redisKind.create(space) } },
      () => undefined,
    );
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    const calls = handlerOf(app, Handler).calls;
    const idOf = (call: { properties: { messageId?: string } }) => call.properties.messageId ?? '';
    // Both queues take every new message now: wait until the new one has handled some.
    await waitFor(() => calls.some((call) => idOf(call).startsWith('live-')), 'a live message handled from the new queue');

    // Step 2: unbind the old queue.
    await channel.unbindQueue(oldQueue, exchange, 'order.created');

    // Step 3: move what waits in the retry queue, then in the old queue, to the new one.
    const fromRetryQueue = await moveQueue(channel, wait, newQueue);
    const fromOldQueue = await moveQueue(channel, oldQueue, newQueue);
    publishing = false;
    await publisher;

    const expected = [...Array.from({ length: 30 }, (_, i) => `old-${i}`), ...Array.from({ length: live }, (_, i) => `live-${i}`)];
    await waitFor(() => new Set(calls.map(idOf)).size === expected.length, `all ${expected.length} messages handled`, 30_000);
    await waitFor(async () => (await broker.count(newQueue)) === 0, 'the new queue empty');
    await app.close();
    suite.app = undefined;

    expect(fromRetryQueue).toBe(6);
    expect(fromOldQueue).toBeGreaterThan(24); // the 24 and the live messages published before the unbind: copies of those in the new queue
    expect([...calls.map(idOf)].sort()).toEqual([...expected].sort()); // each once: the copies were acked without a call
    expect(calls.every((call) => call.attempt === 1)).toBe(true); // the old queue's x-death does not count here
    expect(await broker.count(oldQueue)).toBe(0);
    expect(await broker.count(wait)).toBe(0);
    expect(await broker.count(`${newQueue}.error`)).toBe(0);
  });

  it('docs/migration.md shows the function this test moves messages with, as it is', () => {
    const guide = readFileSync(new URL('../../docs/migration.md', import.meta.url), 'utf8');
    const source = readFileSync(new URL('../support/move-queue.ts', import.meta.url), 'utf8');
    const shown = /<!-- test\/support\/move-queue\.ts -->\n```ts\n([\s\S]*?)```/.exec(guide)?.[1];
    expect(shown).toBe(source);
  });
});
