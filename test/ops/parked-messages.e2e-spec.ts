import { NonRetryableError, ParkedMessages, retryTopologyNames, type ParkedMessageView } from 'nestjs-amqp-retry';
import { HANDLER_REGISTRY_QUEUE } from '../../libs/amqp-retry/src/core/topology/handler-registry.record.js';
import { handlerFor, startApp } from '../support/app.js';
import { AMQP_URL, uniqueName, waitFor, type TestBroker } from '../support/broker.js';
import { useParkingShop } from '../support/parking-shop.js';
import { settleWindow, useSuite } from '../support/suite.js';

/** What each test body makes the handler do: fail (non-retryable, with the payload's `error`) or succeed. */
interface Payload {
  n: number;
  error?: string;
}

describe('ParkedMessages on a real broker', () => {
  const suite = useSuite('e2e.parked');
  const shop = useParkingShop(suite, 'e2e.parked.shop', { headers: { tenant: 'acme' }, messageId: 'same-id' });
  const { start, park } = shop;
  let broker: TestBroker;
  let parked: ParkedMessages;
  let queue: string;
  let exchange: string;
  let sibling: string;
  let errorQueue: string;

  beforeEach(async () => {
    ({ broker, queue } = suite);
    ({ exchange, sibling, errorQueue } = shop);
    // The whole vhost: these tests find handler queues from the registry, as an operator's view does.
    parked = await ParkedMessages.connect({ url: AMQP_URL, wholeVhost: true });
    suite.clients.push(parked);
  });

  const ids = (items: ParkedMessageView[]) => items.map((v) => v.id);

  it('finds the handler queue from the registry and reports depths', async () => {
    await start();
    await park([{ n: 1, error: 'card declined' }], 1);
    expect(await parked.queues()).toContainEqual({
      queue,
      role: 'handler',
      messages: 0,
      consumers: 1, // the broker's count; in flight and activity are only known to the application's own instance
      tiers: retryTopologyNames(queue, { delays: [100] }).tiers.map((tier) => ({ queue: tier, messages: 0 })),
      errorQueue,
      parked: 1,
    });
  });

  it('a start removes the record of a queue deleted since, and keeps those of queues that exist', async () => {
    const gone = uniqueName('e2e.parked.gone');
    const kept = uniqueName('e2e.parked.kept');
    suite.extraQueues.push(kept);
    await broker.channel.assertQueue(kept, { durable: true });
    // Only test records live in the registry on the test broker; a start checks the 10 oldest, so begin empty.
    await broker.channel.assertQueue(HANDLER_REGISTRY_QUEUE, { durable: true });
    await broker.drain(HANDLER_REGISTRY_QUEUE);
    for (const name of [gone, kept])
      await broker.publish('', HANDLER_REGISTRY_QUEUE, { queue: name, errorQueue: `${name}.error`, tiers: [], queueType: 'classic', recordedAt: '' });
    try {
      await start();
      const names = (await broker.drain(HANDLER_REGISTRY_QUEUE)).map((m) => (JSON.parse(m.content.toString()) as { queue: string }).queue);
      expect(names).toEqual(expect.arrayContaining([queue, kept])); // and the default delay ladder's
      expect(names).not.toContain(gone);
    } finally {
      await broker.forgetHandler(kept);
    }
  });

  it('starts and handles messages when the registry cannot be written, and then finds no record', async () => {
    // The registry held by another connection as an exclusive queue: declaring it fails with 405 RESOURCE_LOCKED.
    const amqp = (await import('amqplib')).default;
    const holder = await amqp.connect(AMQP_URL);
    try {
      const channel = await holder.createChannel();
      await channel.deleteQueue(HANDLER_REGISTRY_QUEUE); // only test records live there on the test broker
      await channel.assertQueue(HANDLER_REGISTRY_QUEUE, { exclusive: true, durable: false });
      shop.failing = false;
      const handler = await start();
      await broker.publish(exchange, 'order.created', { n: 1 });
      await waitFor(() => handler.calls.length === 1, 'the handler call');
      expect((await parked.queues()).map((q) => q.queue)).not.toContain(queue);
    } finally {
      await holder.close(); // the exclusive registry goes with it; the next start declares the durable one again
    }
  });

  it('counts by reason and error, filters, pages and shows, leaving every message as it was', async () => {
    await start();
    const before = Date.now();
    await park(
      [
        { n: 1, error: 'card declined' },
        { n: 2, error: 'timeout' },
        { n: 3, error: 'card declined' },
        Buffer.from('not json'),
        { n: 5, error: 'card declined' },
      ],
      5,
    );

    const summary = await parked.summary({ queue });
    expect(summary).toEqual({
      total: 5,
      byReason: [
        { reason: 'non-retryable', count: 4 },
        { reason: 'malformed', count: 1 },
      ],
      byError: [
        { error: 'card declined', count: 3 },
        { error: expect.stringMatching(/JSON/i), count: 1 },
        { error: 'timeout', count: 1 },
      ].sort((a, b) => b.count - a.count || String(a.error).localeCompare(String(b.error))),
    });

    const all = await parked.list({ queue });
    expect(all.total).toBe(5);
    expect(all.items.map((v) => v.body)).toEqual([
      '{"n":1,"error":"card declined"}',
      '{"n":2,"error":"timeout"}',
      '{"n":3,"error":"card declined"}',
      'not json',
      '{"n":5,"error":"card declined"}',
    ]);
    expect(new Set(ids(all.items)).size).toBe(5);
    expect(all.items[0]).toMatchObject({ queue, errorQueue, reason: 'non-retryable', error: 'card declined', attempts: 1, bodyEncoding: 'utf8' });
    expect(all.items[0].headers.tenant).toBe('acme');
    expect(all.items[0].properties.messageId).toBe('same-id');

    expect((await parked.list({ queue, error: 'CARD' })).total).toBe(3);
    expect((await parked.list({ queue, reason: 'malformed' })).items.map((v) => v.body)).toEqual(['not json']);
    expect((await parked.list({ queue, text: '"n":2' })).total).toBe(1);
    expect((await parked.list({ queue, since: new Date(before - 1000) })).total).toBe(5);
    expect((await parked.list({ queue, until: new Date(before - 1000) })).total).toBe(0);
    expect((await parked.list({ queue, since: new Date(Date.now() + 60_000) })).total).toBe(0);

    const page = await parked.list({ queue }, { offset: 1, limit: 2 });
    expect(page.total).toBe(5);
    expect(ids(page.items)).toEqual(ids(all.items).slice(1, 3));

    const shown = await parked.show(errorQueue, all.items[3].id);
    expect(shown).toEqual(all.items[3]);
    expect(await parked.show(errorQueue, 'no-such-id')).toBeUndefined();

    // Browsing neither lost, duplicated nor reordered anything.
    expect(await broker.count(errorQueue)).toBe(5);
    expect(ids((await parked.list({ queue })).items)).toEqual(ids(all.items));
  });

  it('replays the selected messages to their queue only, with fresh attempts, the others staying parked', async () => {
    const handler = await start({ maxAttempts: 2 });
    await park(
      [
        { n: 1, error: 'card declined' },
        { n: 2, error: 'timeout' },
        { n: 3, error: 'card declined' },
      ],
      3,
    );
    const callsBefore = handler.calls.length;
    expect(callsBefore).toBe(6); // two attempts each

    shop.failing = false;
    const dry = await parked.replay({ errorQueue, filter: { error: 'card' } }, { dryRun: true });
    expect(dry).toEqual({ matched: 2, replayed: 0, failed: [], dryRun: true });
    expect(await broker.count(errorQueue)).toBe(3);

    const progress: number[] = [];
    const result = await parked.replay({ errorQueue, filter: { error: 'card' } }, { onProgress: (done, total) => progress.push(done * 100 + total) });
    expect(result).toEqual({ matched: 2, replayed: 2, failed: [], dryRun: false });
    expect(progress).toEqual([103, 203, 303]);
    await waitFor(() => handler.calls.length === callsBefore + 2, 'the replayed calls');
    const replayed = handler.calls.slice(callsBefore);
    expect(replayed.map((c) => [(c.payload as Payload).n, c.attempt])).toEqual([
      [1, 1],
      [3, 1],
    ]);
    const headers = replayed[0].properties.headers ?? {};
    expect(headers.tenant).toBe('acme');
    expect(headers['x-replayed-at']).toEqual(expect.any(String));
    expect(Object.keys(headers).filter((k) => k.startsWith('x-parked') || k.startsWith('x-exception') || k === 'x-death')).toEqual([]);
    expect(replayed[0].properties.messageId).toBe('same-id');

    expect(await broker.count(sibling)).toBe(0); // never sent through the exchange
    expect((await parked.list({ queue })).items.map((v) => v.error)).toEqual(['timeout']);
    expect(await broker.count(errorQueue)).toBe(1);
  });

  it('replays a message once when a refresh cut short left two copies of it, and takes both copies out', async () => {
    const handler = await start();
    await park([{ n: 1, error: 'card declined' }], 1);
    // Two copies with one x-parked-id, one behind the other, as a crash between a refresh's publish and its ack leaves.
    const [original] = await broker.drain(errorQueue);
    const { headers, ...properties } = original.properties;
    const copy = { ...Object.fromEntries(Object.entries(properties).filter(([, v]) => v !== undefined)), headers, persistent: true };
    for (let i = 0; i < 2; i++) await broker.publish('', errorQueue, original.content, copy);
    const callsBefore = handler.calls.length;
    shop.failing = false;
    expect(await parked.replay({ errorQueue, filter: {} })).toEqual({ matched: 1, replayed: 1, failed: [], dryRun: false });
    await waitFor(() => handler.calls.length === callsBefore + 1, 'the replayed call');
    await waitFor(async () => (await broker.count(errorQueue)) === 0, 'neither copy left parked', 3_000);
    await settleWindow(300);
    expect(handler.calls.length).toBe(callsBefore + 1);
  });

  it('a replay the broker stops part-way (a user without write) says its reason and what it did, and loses nothing', async () => {
    await start();
    await park(
      [
        { n: 1, error: 'boom' },
        { n: 2, error: 'boom' },
        { n: 3, error: 'boom' },
      ],
      3,
    );
    const [first] = (await parked.list({ queue })).items;
    // Read everything, write nothing: the first copy published through amq.default closes the channel with a 403.
    const user = await suite.user('/', ['^amqp-retry\\.handlers\\.lock$', '^$', '.*']);
    const url = new URL(AMQP_URL);
    [url.username, url.password] = [user.name, user.password];
    const reader = await ParkedMessages.connect({ url: url.toString(), queues: [queue] });
    suite.clients.push(reader);
    const stopped = await reader.replay({ errorQueue, filter: {} }).then(
      () => new Error('the replay did not stop'),
      (error: unknown) => error as Error,
    );
    expect(stopped.message).toMatch(
      new RegExp(`^The replay of "${errorQueue.replace(/\./g, '\\.')}" stopped after 0 of [1-3] matching message\\(s\\) were replayed`),
    );
    expect(stopped.message).toContain('ACCESS_REFUSED');
    expect(stopped.message).toContain(
      `sent but not confirmed, so may have been delivered; their messages stay parked (check their queue before replaying them again): ${first.id}`,
    );
    await waitFor(async () => (await broker.count(errorQueue)) === 3, 'every message parked still');
    // Without write, not read-only (docs/broker-footprint.md): read covers basic.get and basic.ack, all a purge needs.
    expect(await reader.purge({ errorQueue, ids: [first.id] })).toEqual({ matched: 1, purged: 1, dryRun: false });
    expect(await broker.count(errorQueue)).toBe(2);
  });

  it('replays by id, and a message whose queue is gone stays parked and is reported', async () => {
    const handler = await start();
    await park(
      [
        { n: 1, error: 'boom' },
        { n: 2, error: 'boom' },
      ],
      2,
    );
    const [, second] = (await parked.list({ queue })).items;
    shop.failing = false;
    const calls = handler.calls.length;
    expect(await parked.replay({ errorQueue, ids: [second.id] })).toMatchObject({ matched: 1, replayed: 1 });
    await waitFor(() => handler.calls.length === calls + 1, 'the replayed call');
    expect((handler.calls.at(-1)?.payload as Payload).n).toBe(2);

    // A parked copy that names a queue that does not exist: no handler queue in scope, so no replay goes there.
    const ghost = uniqueName('e2e.parked.ghost');
    await broker.publish(
      '',
      errorQueue,
      { n: 9 },
      { headers: { 'x-parked-id': 'ghost-1', 'x-original-queue': ghost, 'x-parked-reason': 'exhausted' } },
    );
    const result = await parked.replay({ errorQueue });
    expect(result.replayed).toBe(1);
    const unreplayable = `its queue "${ghost}" (x-original-queue) is not a handler queue this view looks after; no replay goes there (should it be one whose record is gone, name it as the handler queue: the CLI's --queue)`;
    expect(result.failed).toEqual([{ id: 'ghost-1', error: unreplayable }]);
    expect(await parked.show(errorQueue, 'ghost-1')).toMatchObject({ queue: '', unreplayable, reason: 'exhausted' });

    // A copy parked by an older version: no id, no queue header. Its id is a digest; its queue, the recorded handler's.
    await broker.publish('', errorQueue, { n: 10 }, { headers: { 'x-parked-reason': 'exhausted', 'x-exception-message': 'old' } });
    const [old] = (await parked.list({ queue, error: 'old' })).items;
    expect(old).toMatchObject({ id: expect.stringMatching(/^h-[0-9a-f]{24}$/), queue, body: '{"n":10}' });
    expect((await parked.list({ queue, error: 'old' })).items[0].id).toBe(old.id); // stable across browses
    const before = handler.calls.length;
    expect(await parked.replay({ errorQueue, ids: [old.id] })).toEqual({ matched: 1, replayed: 1, failed: [], dryRun: false });
    await waitFor(() => handler.calls.length === before + 1, 'the old copy replayed');
    expect(handler.calls.at(-1)?.payload).toEqual({ n: 10 });
    expect(await broker.count(errorQueue)).toBe(1);
  });

  it('edits and replays one message with a corrected body', async () => {
    const handler = await start();
    await park([Buffer.from('{"n":1,'), { n: 2, error: 'boom' }], 2);
    const [broken] = (await parked.list({ queue, reason: 'malformed' })).items;
    const calls = handler.calls.length;
    const result = await parked.editAndReplay(errorQueue, broken.id, '{"n":1}');
    expect(result).toEqual({ matched: 1, replayed: 1, failed: [], dryRun: false });
    await waitFor(() => handler.calls.length === calls + 1, 'the corrected call');
    expect(handler.calls.at(-1)?.payload).toEqual({ n: 1 });
    expect(await parked.editAndReplay(errorQueue, 'no-such-id', '{}')).toMatchObject({ matched: 0, replayed: 0 });
    expect((await parked.list({ queue })).items.map((v) => v.reason)).toEqual(['non-retryable']);
    expect(await broker.count(sibling)).toBe(0);
  });

  it('purges only the matching messages, and exports the matching ones as JSON lines', async () => {
    await start();
    await park(
      [
        { n: 1, error: 'card declined' },
        { n: 2, error: 'timeout' },
        { n: 3, error: 'card declined' },
      ],
      3,
    );

    const lines: string[] = [];
    for await (const line of parked.export({ errorQueue, filter: { error: 'card' } })) lines.push(line);
    expect(lines.map((line) => (JSON.parse(line) as ParkedMessageView).body)).toEqual([
      '{"n":1,"error":"card declined"}',
      '{"n":3,"error":"card declined"}',
    ]);
    expect(lines.every((line) => !line.includes('\n'))).toBe(true);
    expect(await broker.count(errorQueue)).toBe(3);

    // A reader that stops after the first line: the walk stops and gives every message back.
    for await (const line of parked.export({ errorQueue })) {
      expect(JSON.parse(line)).toMatchObject({ body: '{"n":1,"error":"card declined"}' });
      break;
    }
    await waitFor(async () => (await broker.count(errorQueue)) === 3, 'the messages given back');

    expect(await parked.purge({ errorQueue, filter: { error: 'timeout' } }, { dryRun: true })).toEqual({ matched: 1, purged: 0, dryRun: true });
    expect(await parked.purge({ errorQueue, filter: { error: 'timeout' } })).toEqual({ matched: 1, purged: 1, dryRun: false });
    expect(await broker.count(errorQueue)).toBe(2);
    expect((await parked.list({ queue })).items.map((v) => v.error)).toEqual(['card declined', 'card declined']);
  });

  it('stops an export whose reader stalls, giving every message back, and tells the reader when it comes back', async () => {
    await start();
    const bodies = Array.from({ length: 300 }, (_, n) => ({ n, error: 'card declined' }));
    await park(bodies, bodies.length);
    const reader = parked.export({ errorQueue })[Symbol.asyncIterator]();
    const stalledAt = Date.now();
    expect((await reader.next()).done).toBe(false); // one line read, then nothing: a download paused
    await waitFor(async () => (await broker.count(errorQueue))! < bodies.length, 'the walk holding messages unacked');
    await waitFor(async () => (await broker.count(errorQueue)) === bodies.length, 'every message given back', 20_000);
    expect(Date.now() - stalledAt).toBeGreaterThanOrEqual(9_000); // READER_STALL_MS, 10 s
    // The parking queue is free again: a walk runs, and finds them all.
    expect((await parked.summary({ queue })).total).toBe(bodies.length);
    let read = 1;
    const rest = (async () => {
      for (let line = await reader.next(); !line.done; line = await reader.next()) read++;
    })();
    await expect(rest).rejects.toThrow(`The export of "${errorQueue}" stopped: its reader took nothing for 10 s`);
    expect(read).toBeLessThan(bodies.length);
  }, 60_000);

  it('browses a quorum parking queue many times without its delivery count reaching a delivery limit', async () => {
    const Handler = handlerFor({ queue, exchange, routingKey: 'order.created', delays: [100], queueType: 'quorum' }, (payload) => {
      throw new NonRetryableError((payload as Payload).error ?? 'no');
    });
    await broker.channel.assertExchange(exchange, 'topic', { durable: true });
    await broker.declareQueue(sibling, { exchange, key: 'order.created' });
    suite.app = await startApp([Handler]);
    await park(
      [
        { n: 1, error: 'a' },
        { n: 2, error: 'b' },
      ],
      2,
    );
    const first = await parked.list({ queue });
    // Back to back: each walk must find every message the one before gave back (a quorum queue takes them back
    // asynchronously).
    for (let i = 0; i < 25; i++) expect((await parked.summary({ queue })).total).toBe(2);
    const last = await parked.list({ queue });
    expect(last.items.map((v) => [v.id, v.body])).toEqual(first.items.map((v) => [v.id, v.body]));
    expect(await broker.count(errorQueue)).toBe(2);
    // The broker's own count, read from outside: refreshed before it could reach 4.x's default limit of 20.
    const raw = await broker.drain(errorQueue);
    expect(raw.map((m) => Number(m.properties.headers?.['x-delivery-count'] ?? 0)).every((count) => count < 12)).toBe(true);
    expect(raw.map((m) => m.properties.headers?.['x-parked-id'])).toEqual(ids(first.items));
  });
});
