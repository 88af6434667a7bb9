import { ParkedMessages, partitionNames, planDelayTopology, QueueControl, RetryPublisher, retryTopologyNames } from 'nestjs-amqp-retry';
import { createApp, handlerFor, startApp, TEST_OPTIONS } from '../support/app.js';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { ctl } from '../support/broker-control.js';
import { usePartitionSuite } from '../support/partitions.js';
import type { BrokerUser } from '../support/suite.js';

/** What rabbitmqctl lists of a queue or an exchange, its arguments as JSON. */
interface Listed {
  name: string;
  arguments: Record<string, unknown>;
}
interface ListedQueue extends Listed {
  durable: boolean;
  auto_delete: boolean;
  exclusive: boolean;
}
interface ListedExchange extends Listed {
  type: string;
}
interface ListedBinding {
  source_name: string;
  destination_name: string;
  routing_key: string;
}

/** rabbitmqctl's JSON rows, with the arguments (listed as [name, AMQP type, value] triples) as an object. */
const rows = async <T>(vhost: string, ...args: string[]): Promise<T[]> => {
  const parsed = JSON.parse(await ctl(...args, '-p', vhost, '-q', '--formatter', 'json')) as Array<T & { arguments?: unknown }>;
  const argumentsOf = (listed: unknown) =>
    Array.isArray(listed) ? Object.fromEntries((listed as unknown[][]).map((entry) => [entry[0], entry[entry.length - 1]])) : (listed ?? {});
  return parsed.map((row) => ({ ...row, arguments: argumentsOf(row.arguments) }));
};
const listQueues = (vhost = '/') => rows<ListedQueue>(vhost, 'list_queues', 'name', 'durable', 'auto_delete', 'exclusive', 'arguments');
const listExchanges = (vhost = '/') => rows<ListedExchange>(vhost, 'list_exchanges', 'name', 'type', 'arguments');
const listBindings = (vhost = '/') => rows<ListedBinding>(vhost, 'list_bindings', 'source_name', 'destination_name', 'routing_key');

/** A name as a literal in a permission's regular expression. */
const literal = (name: string) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const under = (prefixes: readonly string[]) => (name: string) => prefixes.some((prefix) => name === prefix || name.startsWith(`${prefix}.`));
const sorted = (names: Iterable<string>) => [...names].sort();

/**
 * docs/broker-footprint.md, checked against the broker: an application with a handler of three tiers and a handler of
 * one tier in two partitions declares the queues and exchanges the page lists (names from the public helpers, counts
 * from the page's formulas), with the arguments and types it states, and nothing else under their names; what stays
 * once the application stops is what the page says to delete, and the page's deletion sequence leaves nothing.
 */
describe('the broker footprint', () => {
  const delays = { plain: ['1s', '10s', '1m'], parted: ['1s'] };
  const P = 2;
  /** The suite's queue is the partitioned handler's, `plain` another handler's: the suite deletes both topologies. */
  const suite = usePartitionSuite('e2e.footprint.parted', P);
  let broker: TestBroker;
  let plain = '';
  let parted = '';

  beforeEach(() => {
    ({ broker, queue: parted } = suite);
    plain = suite.retryQueue(uniqueName('e2e.footprint'));
  });

  it('declares per handler and per partition what the page lists, with its arguments, and deletes to nothing', async () => {
    const Plain = handlerFor({ queue: plain, delays: delays.plain }, () => undefined);
    const Parted = handlerFor(
      { queue: parted, delays: delays.parted, partitions: { count: P, key: { header: 'x-key' }, heartbeat: '200ms' } },
      () => undefined,
    );
    const app = (suite.app = await startApp([Plain, Parted], TEST_OPTIONS));

    const ours = under([plain, parted]);
    const plainNames = retryTopologyNames(plain, { delays: delays.plain });
    const partNames = Array.from({ length: P }, (_, i) => retryTopologyNames(partitionNames(parted).partition(i), { delays: delays.parted }));

    // The page's formulas: a handler with T tiers has T + 4 durable queues, one presence queue per schedule while an
    // instance runs, and 5 exchanges; a partitioned one P x (T + 3), the dead-letter queue its partitions share and the
    // record of its hash key, P x 5 exchanges, the hash exchange and the members' exchange.
    const T = { plain: delays.plain.length, parted: delays.parted.length };
    const durableQueues = T.plain + 4 + P * (T.parted + 3) + 2;
    const presenceQueues = 1 + P;
    const exchangeCount = 5 + (5 * P + 2);
    expect([durableQueues, presenceQueues, exchangeCount]).toEqual([7 + 10, 3, 17]);

    const { deadLetterQueue: shared, keyRecord } = partitionNames(parted);
    const partQueues = partNames.flatMap((n) => [...n.queues.filter((q) => q !== `${n.queue}.dlx.dead`), n.presenceQueue]);
    const expectedQueues = [...plainNames.queues, plainNames.presenceQueue, ...partQueues, shared, keyRecord];
    const expectedExchanges = [...plainNames.exchanges, ...partNames.flatMap((n) => n.exchanges), parted, partitionNames(parted).membersExchange];
    expect(expectedQueues).toHaveLength(durableQueues + presenceQueues);
    expect(new Set(expectedExchanges).size).toBe(exchangeCount);

    // Presence queues are declared as the handler starts; wait for every one rather than race the partitions' start.
    const queues = await waitFor(
      async () => {
        const listed = (await listQueues()).filter((q) => ours(q.name));
        return listed.length >= expectedQueues.length && listed;
      },
      `${expectedQueues.length} queues under ${plain} and ${parted}`,
      20_000,
    );
    expect(sorted(queues.map((q) => q.name))).toEqual(sorted(expectedQueues));
    const exchanges = (await listExchanges()).filter((e) => ours(e.name));
    expect(sorted(exchanges.map((e) => e.name))).toEqual(sorted(new Set(expectedExchanges)));

    // Durable, and auto-deleted only the presence queues; no queue under these names is exclusive.
    const byName = new Map(queues.map((q) => [q.name, q]));
    const presence = new Set([plainNames.presenceQueue, ...partNames.map((n) => n.presenceQueue)]);
    for (const q of queues)
      expect({ name: q.name, durable: q.durable, auto_delete: q.auto_delete, exclusive: q.exclusive }).toEqual({
        name: q.name,
        durable: true,
        auto_delete: presence.has(q.name),
        exclusive: false,
      });

    // The arguments the page's tables state.
    expect(byName.get(plain)?.arguments).toEqual({ 'x-dead-letter-exchange': `${plain}.dlx`, 'x-queue-type': 'classic' });
    plainNames.tiers.forEach((tier, k) =>
      expect(byName.get(tier)?.arguments).toEqual({
        'x-dead-letter-exchange': `${plain}.return`,
        'x-dead-letter-routing-key': plainNames.tiers[Math.min(k + 1, plainNames.tiers.length - 1)],
        'x-message-ttl': [1_000, 10_000, 60_000][k],
        'x-queue-type': 'classic',
      }),
    );
    for (const name of [plainNames.errorQueue, plainNames.planQueue, `${plain}.dlx.dead`, plainNames.presenceQueue])
      expect(byName.get(name)?.arguments).toEqual({ 'x-queue-type': 'classic' });
    for (const { queue } of partNames)
      expect(byName.get(queue)?.arguments).toEqual({
        'x-dead-letter-exchange': `${queue}.dlx`,
        'x-queue-type': 'classic',
        'x-single-active-consumer': true,
      });

    const typeOf = Object.fromEntries(exchanges.map((e) => [e.name, [e.type, e.arguments]]));
    expect({
      dlx: typeOf[`${plain}.dlx`],
      first: typeOf[`${plain}.dlx.first`],
      sort: typeOf[`${plain}.dlx.sort`],
      firstTier: typeOf[`${plain}.dlx.first-tier`],
      return: typeOf[`${plain}.return`],
      hash: typeOf[parted],
      members: typeOf[partitionNames(parted).membersExchange],
    }).toEqual({
      dlx: ['direct', { 'alternate-exchange': `${plain}.dlx.first` }],
      first: ['fanout', {}],
      sort: ['headers', { 'alternate-exchange': `${plain}.dlx.first-tier` }],
      firstTier: ['fanout', {}],
      return: ['fanout', {}],
      hash: ['x-consistent-hash', { 'hash-header': 'x-key' }],
      members: ['fanout', {}],
    });

    // Per instance: an exclusive, server-named queue bound to the members' exchange, and one bound to the control
    // exchange by each handler queue's name (a partitioned handler: the name it was given, not its partitions').
    const bindings = await listBindings();
    const members = bindings.filter((b) => b.source_name === partitionNames(parted).membersExchange);
    expect(members).toHaveLength(1);
    expect(members[0].destination_name).toMatch(/^amq\.gen-/);
    const control = bindings.filter((b) => b.source_name === 'amqp-retry.control' && ours(b.routing_key));
    expect(sorted(control.map((b) => b.routing_key))).toEqual(sorted([plain, parted])); // a partitioned handler by its own name
    expect(new Set(control.map((b) => b.destination_name)).size).toBe(1);
    expect(control[0].destination_name).toMatch(/^amq\.gen-/);
    const privateQueues = (await listQueues()).filter((q) => q.name === members[0].destination_name || q.name === control[0].destination_name);
    expect(privateQueues.map((q) => [q.durable, q.auto_delete, q.exclusive])).toEqual([
      [false, true, true],
      [false, true, true],
    ]);

    // Once the application stops: the presence and private queues are gone, the durable ones stay.
    await app.close();
    suite.app = undefined;
    const left = await waitFor(
      async () => {
        const listed = (await listQueues()).filter((q) => ours(q.name));
        return listed.length === durableQueues && listed;
      },
      `${durableQueues} durable queues left`,
      10_000,
    );
    expect(sorted(left.map((q) => q.name))).toEqual(sorted(expectedQueues.filter((name) => !presence.has(name))));
    expect((await listQueues()).filter((q) => privateQueues.some((p) => p.name === q.name))).toEqual([]);

    // The page's removal: every queue, then every exchange, by the helpers' names; nothing of either handler remains.
    for (const name of [...plainNames.queues, ...partNames.flatMap((n) => n.queues), shared, keyRecord]) await broker.channel.deleteQueue(name);
    for (const name of new Set(expectedExchanges)) await broker.channel.deleteExchange(name);
    expect((await listQueues()).filter((q) => ours(q.name))).toEqual([]);
    expect((await listExchanges()).filter((e) => ours(e.name))).toEqual([]);
  });
  it("runs an application under the page's application permissions, and the CLI's reads, replay and pause under its own", async () => {
    // A vhost of its own: no other application's records in its registry (see the page's note on RabbitMQ 4.x).
    const ownVhost = await suite.vhost();
    const vhost = ownVhost.name;
    const guest = await TestBroker.connect(ownVhost.url());
    suite.clients.push(guest);
    const shop = uniqueName('e2e.footprint.shop'); // the handler's own exchange: a name outside its queue's
    const ladder = uniqueName('e2e.footprint.delay'); // a delay ladder of its own
    const application = uniqueName('footprint-app');

    // The page's regular expressions, for handler queues `plain` and `parted`, the exchange `shop` and the ladder.
    const handlers = `(${literal(plain)}|${literal(parted)})`;
    const own = `${handlers}(\\..+)?|${literal(shop)}|amqp-retry\\..+|${literal(ladder)}\\..+|amq\\.gen-.+`;
    const appPermissions: [string, string, string] = [`^(${own})$`, `^(${own}|amq\\.default)$`, `^(${own})$`];
    const cliPermissions: [string, string, string] = [
      '^amqp-retry\\.handlers\\.lock$',
      '^(amq\\.default|amqp-retry\\.control)$',
      `^(amqp-retry\\.handlers|${handlers}(\\.p[0-9]+)?\\.error|${literal(ladder)}\\.error)$`,
    ];
    const [appUser, cliUser] = [await suite.user(vhost, appPermissions), await suite.user(vhost, cliPermissions)];
    const urlAs = (user: BrokerUser) => ownVhost.url(user.name, user.password);

    const calls = { plain: 0, parted: [] as unknown[] };
    const Plain = handlerFor({ queue: plain, exchange: shop, routingKey: 'k', delays: ['200ms'], maxAttempts: 2 }, () => {
      calls.plain++;
      throw new Error('declined');
    });
    const Parted = handlerFor(
      { queue: parted, delays: ['200ms'], partitions: { count: P, key: { header: 'x-key' }, heartbeat: '200ms' } },
      (payload) => void calls.parted.push(payload),
    );
    const logger = new RecordingLogger();
    const created = await createApp([Plain, Parted], { url: urlAs(appUser), application, delayedDelivery: { prefix: ladder } });
    created.useLogger(logger);
    const app = (suite.app = await created.init());
    const refused = () => logger.lines.filter((line) => /^(warn|error) /.test(line) && /ACCESS_REFUSED|refused|unavailable|could not/i.test(line));
    expect(refused()).toEqual([]);

    // Its delay ladder: 75 queues (73 levels, ready, error) and 12 exchanges, as the page counts; and the shared objects.
    const ladderNames = planDelayTopology(ladder);
    const inLadder = under([ladder]);
    const ladderQueues = (await listQueues(vhost)).filter((q) => inLadder(q.name));
    const ladderExchanges = (await listExchanges(vhost)).filter((e) => inLadder(e.name));
    expect([ladderQueues.length, ladderExchanges.length]).toEqual([75, 12]);
    expect(sorted(ladderQueues.map((q) => q.name))).toEqual(sorted(ladderNames.queues.map((q) => q.name)));
    expect(sorted(ladderExchanges.map((e) => e.name))).toEqual(sorted(ladderNames.exchanges.map((e) => e.name)));
    expect((await listQueues(vhost)).filter((q) => q.name === 'amqp-retry.handlers').map((q) => [q.durable, q.arguments])).toEqual([
      [true, { 'x-queue-type': 'classic' }],
    ]);
    expect((await listExchanges(vhost)).filter((e) => e.name === 'amqp-retry.control').map((e) => e.type)).toEqual(['direct']);

    // Retries, parking, a delayed publish through its own ladder, a partition's delivery: all under those permissions.
    await guest.publish(shop, 'k', { n: 1 });
    await waitFor(async () => (await guest.count(`${plain}.error`)) === 1, `a message parked in ${plain}.error`, 15_000);
    expect(calls.plain).toBe(2);
    await app.get(RetryPublisher).publish(parted, 'any', { late: true }, { delay: '300ms', headers: { 'x-key': 'a' } });
    await waitFor(() => calls.parted.length === 1, 'the delayed message handled in a partition', 15_000);
    expect(calls.parted).toEqual([{ late: true }]);

    // The CLI's user: finds the application's queues in the registry, reads and replays the parked message, pauses.
    const parked = await ParkedMessages.connect({ url: urlAs(cliUser), application });
    try {
      const queues = await parked.queues();
      expect(queues.map((q) => q.queue)).toEqual(
        expect.arrayContaining([plain, ...Array.from({ length: P }, (_, i) => partitionNames(parted).partition(i))]),
      );
      expect(queues.find((q) => q.queue === plain)?.parked).toBe(1);
      const { total } = await parked.list({ queue: plain });
      expect(total).toBe(1);
      const replayed = await parked.replay({ errorQueue: `${plain}.error`, filter: {} });
      expect([replayed.replayed, replayed.failed.length]).toEqual([1, 0]);
    } finally {
      await parked.close();
    }
    await waitFor(
      () => calls.plain === 4 && guest.count(`${plain}.error`).then((n) => n === 1),
      'the replayed message run twice and parked again',
      15_000,
    );
    const control = QueueControl.create({ url: urlAs(cliUser) });
    const paused = await control.pause(plain, { by: 'footprint test' });
    expect([paused.routed, paused.replies.length]).toEqual([true, 1]);
    const resumed = await control.resume(plain, { by: 'footprint test' });
    expect([resumed.routed, resumed.replies.length]).toEqual([true, 1]);
    expect(refused()).toEqual([]);

    // Without the application's permissions, the same start is refused: the check above is not vacuous.
    await app.close();
    suite.app = undefined;
    const refusedStart = await createApp([handlerFor({ queue: plain, exchange: shop, routingKey: 'k', delays: ['200ms'] }, () => undefined)], {
      url: urlAs(cliUser),
      delayedDelivery: false,
    });
    refusedStart.useLogger(false);
    await expect(refusedStart.init()).rejects.toThrow(/ACCESS_REFUSED|access to/i);
    await refusedStart.close().catch(() => undefined);
  });
});
