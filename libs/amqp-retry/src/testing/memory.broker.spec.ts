import { deathRulesOf, deliveredHeaders, type BrokerMessage, type DeathRules } from './dead-letter.rules.js';
import { topicMatches } from '../core/topology/topic-pattern.match.js';
import { headersMatch } from './exchange.routing.js';
import { DEAD_LETTER_RETRY_MS, MemoryBroker } from './memory.broker.js';
import { VirtualClock } from './virtual.clock.js';

const message = (routingKey: string, over: Partial<BrokerMessage> = {}): BrokerMessage => ({
  content: Buffer.from('{}'),
  properties: { headers: {} },
  exchange: 'e',
  routingKeys: [routingKey],
  deaths: [],
  ...over,
});
const queue = (broker: MemoryBroker, name: string, args: Record<string, unknown> = {}) =>
  broker.assertQueue(name, { durable: true, exclusive: false, autoDelete: false, arguments: args }, 1);
const bind = (
  broker: MemoryBroker,
  source: string,
  destination: string,
  pattern = '',
  args: Record<string, unknown> = {},
  destinationType: 'queue' | 'exchange' = 'queue',
) => broker.bind({ source, destination, destinationType, pattern, arguments: args });

describe('the in-memory broker: routing', () => {
  it('matches topic patterns word by word, * one word, # none or more', () => {
    expect(topicMatches('order.*', 'order.created')).toBe(true);
    expect(topicMatches('order.*', 'order.created.eu')).toBe(false);
    expect(topicMatches('order.#', 'order')).toBe(true);
    expect(topicMatches('#.eu', 'order.created.eu')).toBe(true);
    expect(topicMatches('*.created', 'created')).toBe(false);
  });

  it('matches headers bindings: all and any ignore x- arguments, the -with-x modes compare them', () => {
    const headers = { 'x-first-death-queue': 'q', 'x-first-death-reason': 'expired', kind: 'a' };
    expect(headersMatch({ 'x-match': 'all', kind: 'a' }, headers)).toBe(true);
    expect(headersMatch({ 'x-match': 'all', 'x-first-death-reason': 'rejected' }, headers)).toBe(true); // no plain argument: matches all
    expect(headersMatch({ 'x-match': 'all-with-x', 'x-first-death-reason': 'rejected' }, headers)).toBe(false);
    expect(headersMatch({ 'x-match': 'all-with-x', 'x-first-death-queue': 'q', 'x-first-death-reason': 'expired' }, headers)).toBe(true);
    expect(headersMatch({ 'x-match': 'any', kind: 'b', other: 'x' }, headers)).toBe(false);
    expect(headersMatch({ 'x-match': 'any-with-x', kind: 'b', 'x-first-death-queue': 'q' }, headers)).toBe(true);
  });

  it('routes through exchange-to-exchange bindings and to the alternate exchange when no binding matches', () => {
    const broker = new MemoryBroker(new VirtualClock(0));
    broker.assertExchange('ae', 'fanout', {});
    broker.assertExchange('main', 'direct', { 'alternate-exchange': 'ae' });
    broker.assertExchange('inner', 'topic', {});
    queue(broker, 'direct-q');
    queue(broker, 'topic-q');
    queue(broker, 'fallback');
    bind(broker, 'main', 'direct-q', 'a');
    bind(broker, 'main', 'inner', 'b', {}, 'exchange');
    bind(broker, 'inner', 'topic-q', '#');
    bind(broker, 'ae', 'fallback');
    expect([...broker.route('main', ['a'], {})]).toEqual(['direct-q']);
    expect([...broker.route('main', ['b'], {})]).toEqual(['topic-q']);
    expect([...broker.route('main', ['c'], {})]).toEqual(['fallback']);
    expect([...broker.route('', ['direct-q'], {})]).toEqual(['direct-q']);
  });

  it('refuses a redeclaration with other arguments (406) and a publish to a missing exchange (404)', () => {
    const broker = new MemoryBroker(new VirtualClock(0));
    queue(broker, 'q', { 'x-message-ttl': 1000 });
    expect(() => queue(broker, 'q', { 'x-message-ttl': 2000 })).toThrow(/PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue 'q'/);
    expect(() => broker.publish('nowhere', message('k'))).toThrow("NOT_FOUND - no exchange 'nowhere' in vhost '/'");
  });
});

describe('the in-memory broker: expiry and dead-lettering', () => {
  const setUp = (rules: 'current' | 'legacy' = 'current') => {
    const clock = new VirtualClock(1_700_000_000_000);
    clock.autoRun = false;
    const broker = new MemoryBroker(clock, rules);
    broker.assertExchange('dlx', 'fanout', {});
    broker.assertExchange('back', 'fanout', {});
    queue(broker, 'work', { 'x-dead-letter-exchange': 'dlx' });
    queue(broker, 'wait', { 'x-message-ttl': 1000, 'x-dead-letter-exchange': 'back' });
    bind(broker, 'dlx', 'wait');
    bind(broker, 'back', 'work');
    return { clock, broker, work: broker.queues.get('work')!, wait: broker.queues.get('wait')! };
  };

  it('writes x-death as 3.13+ does: the counted entry moves to the front; first and last death headers', async () => {
    const { clock, broker, work, wait } = setUp();
    broker.enqueue(work, message('k'));
    for (let round = 1; round <= 2; round++) {
      broker.reject('work', work.ready.shift()!);
      await clock.runUntil(clock.now + 1000);
    }
    const headers = deliveredHeaders(work.ready[0].message);
    const deaths = (headers['x-death'] as Array<Record<string, unknown>>).map((d) => [d.queue, d.reason, d.count]);
    expect(deaths).toEqual([
      ['wait', 'expired', 2],
      ['work', 'rejected', 2],
    ]);
    expect([headers['x-first-death-queue'], headers['x-first-death-reason'], headers['x-last-death-queue']]).toEqual(['work', 'rejected', 'wait']);
    expect(wait.ready).toHaveLength(0);
  });

  it("refuses a publish past x-max-length under reject-publish, and under reject-publish-dlx dead-letters it as 'maxlen' too", () => {
    const { broker, wait } = setUp();
    queue(broker, 'plain', { 'x-max-length': 1, 'x-overflow': 'reject-publish', 'x-dead-letter-exchange': 'dlx' });
    queue(broker, 'full', { 'x-max-length': 1, 'x-overflow': 'reject-publish-dlx', 'x-dead-letter-exchange': 'dlx' });
    const [plain, full] = [broker.queues.get('plain')!, broker.queues.get('full')!];
    expect([broker.enqueue(plain, message('a')), broker.enqueue(plain, message('b'))]).toEqual([true, false]);
    expect(wait.ready).toHaveLength(0);
    expect([broker.enqueue(full, message('c')), broker.enqueue(full, message('d'))]).toEqual([true, false]);
    expect(full.ready.map((e) => e.message.routingKeys[0])).toEqual(['c']);
    const dead = wait.ready.map((e) => deliveredHeaders(e.message)['x-death'] as Array<Record<string, unknown>>);
    expect(dead.map((deaths) => [deaths[0].queue, deaths[0].reason])).toEqual([['full', 'maxlen']]);
  });

  it('refuses a publish to a quorum queue under reject-publish only once it holds more than x-max-length', () => {
    const { broker } = setUp();
    const quorum = queue(broker, 'quorum', { 'x-queue-type': 'quorum', 'x-max-length': 1, 'x-overflow': 'reject-publish' });
    const classic = queue(broker, 'classic', { 'x-max-length': 1, 'x-overflow': 'reject-publish' });
    expect(['a', 'b', 'c'].map((key) => broker.enqueue(quorum, message(key)))).toEqual([true, true, false]);
    expect(['a', 'b'].map((key) => broker.enqueue(classic, message(key)))).toEqual([true, false]);
  });

  it('keeps an at-least-once dead letter its target refuses in the source queue, and tries it again until the target takes it', async () => {
    const { clock, broker } = setUp();
    const quorum = { 'x-queue-type': 'quorum', 'x-overflow': 'reject-publish', 'x-dead-letter-strategy': 'at-least-once' };
    broker.assertExchange('to-full', 'fanout', {});
    const tier = queue(broker, 'tier', { ...quorum, 'x-message-ttl': 1000, 'x-dead-letter-exchange': 'to-full' });
    const full = queue(broker, 'full', { ...quorum, 'x-max-length': 1 });
    bind(broker, 'to-full', 'full');
    broker.enqueue(full, message('first'));
    broker.enqueue(full, message('second'));
    broker.enqueue(tier, message('retry'));
    await clock.runUntil(clock.now + 1000);
    expect(full.ready).toHaveLength(2);
    expect(tier.heldDeadLetters.size).toBe(1);
    await clock.runUntil(clock.now + DEAD_LETTER_RETRY_MS);
    expect(tier.heldDeadLetters.size).toBe(1);
    full.ready.splice(0);
    await clock.runUntil(clock.now + DEAD_LETTER_RETRY_MS);
    expect(full.ready.map((e) => [e.message.routingKeys[0], e.message.deaths[0].reason])).toEqual([['retry', 'expired']]);
    expect(tier.heldDeadLetters.size).toBe(0);
  });

  it('drops an at-most-once dead letter its target refuses (a classic source)', async () => {
    const { clock, broker } = setUp();
    broker.assertExchange('to-full', 'fanout', {});
    const tier = queue(broker, 'tier', { 'x-message-ttl': 1000, 'x-dead-letter-exchange': 'to-full' });
    const full = queue(broker, 'full', { 'x-max-length': 1, 'x-overflow': 'reject-publish' });
    bind(broker, 'to-full', 'full');
    broker.enqueue(full, message('first'));
    broker.enqueue(tier, message('retry'));
    await clock.runUntil(clock.now + 1000);
    full.ready.splice(0);
    await clock.runUntil(clock.now + DEAD_LETTER_RETRY_MS);
    expect(full.ready).toHaveLength(0);
    expect(tier.heldDeadLetters.size).toBe(0);
  });

  it('drops a dead-letter cycle with no rejection in it', async () => {
    const { clock, broker, work, wait } = setUp();
    // A message that expires in work (its own expiration) goes to wait, expires there, and would come back to work.
    broker.queues.get('work')!.args['x-message-ttl'] = 10;
    broker.enqueue(work, message('k'));
    await clock.runUntil(clock.now + 10);
    expect(wait.ready).toHaveLength(1);
    await clock.runUntil(clock.now + 1000);
    expect(work.ready).toHaveLength(0);
  });

  it('expires messages at the head only: a short expiration waits behind a long one', async () => {
    const { clock, broker, wait } = setUp();
    broker.deleteQueue('work');
    broker.enqueue(wait, message('long'));
    await clock.runUntil(clock.now + 500);
    broker.enqueue(wait, message('short', { properties: { headers: {}, expiration: '1' } }));
    await clock.runUntil(clock.now + 400);
    expect(wait.ready.map((e) => e.message.routingKeys[0])).toEqual(['long', 'short']);
    await clock.runUntil(clock.now + 100);
    expect(wait.ready).toHaveLength(0);
  });

  it('follows 3.10 with legacy rules: a counted entry stays in place and no x-last-death is written', async () => {
    const { clock, broker, work } = setUp('legacy');
    broker.enqueue(work, message('k'));
    for (let round = 1; round <= 2; round++) {
      broker.reject('work', work.ready.shift()!);
      await clock.runUntil(clock.now + 1000);
    }
    const headers = deliveredHeaders(work.ready[0].message, 'legacy');
    expect((headers['x-death'] as Array<Record<string, unknown>>).map((d) => [d.queue, d.count])).toEqual([
      ['wait', 2],
      ['work', 2],
    ]);
    expect('x-last-death-queue' in headers).toBe(false);
  });

  it('counts redeliveries of a quorum queue and dead-letters past its delivery limit', () => {
    const { broker } = setUp();
    const q = queue(broker, 'qq', { 'x-queue-type': 'quorum', 'x-delivery-limit': 1, 'x-dead-letter-exchange': 'dlx' });
    broker.enqueue(q, message('k'));
    broker.requeue('qq', q.ready.shift()!);
    expect(q.ready[0].deliveryCount).toBe(1);
    broker.requeue('qq', q.ready.shift()!);
    expect(q.ready).toHaveLength(0);
    expect(broker.queues.get('wait')!.ready[0].message.deaths[0]).toMatchObject({ queue: 'qq', reason: 'delivery_limit' });
  });
});

describe("a quorum queue's default delivery limit", () => {
  const redeliveries = (rules: DeathRules, times: number) => {
    const clock = new VirtualClock(0);
    const broker = new MemoryBroker(clock, rules);
    const declaration = { durable: true, exclusive: false, autoDelete: false };
    broker.assertQueue('qq', { ...declaration, arguments: { 'x-queue-type': 'quorum' } }, 1);
    const q = broker.queues.get('qq')!;
    broker.enqueue(q, message('k'));
    for (let i = 0; i < times && q.ready.length > 0; i++) broker.requeue('qq', q.ready.shift()!);
    return q.ready;
  };

  it('is 20 with the rules of 4.x: the 21st redelivery dead-letters the message', () => {
    expect(redeliveries('current', 20)).toHaveLength(1);
    expect(redeliveries('current', 21)).toHaveLength(0);
  });

  it('is none with the rules of 3.10: a message given back 100 times is still there', () => {
    expect(redeliveries('legacy', 100)).toEqual([expect.objectContaining({ deliveryCount: 100 })]);
  });
});

describe("the in-memory broker's version", () => {
  it('follows the rules of 3.13 and later from 3.13 on, of 3.10 before, and refuses what is no version, naming the option', () => {
    expect(['4.1.0', '4.2.0-rc.1', '3.13.0', '3.13', '3.12.14', '3.10.8+1'].map(deathRulesOf)).toEqual([
      'current',
      'current',
      'current',
      'current',
      'legacy',
      'legacy',
    ]);
    for (const bad of ['v4.1.0', '4', '', 'latest']) {
      expect(() => deathRulesOf(bad)).toThrow(`RetryHarness option brokerVersion: ${JSON.stringify(bad)} is not a RabbitMQ version`);
    }
  });
});
