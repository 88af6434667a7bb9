import { randomBytes } from 'node:crypto';
import { BrokerError, notFound, preconditionFailed, refusal, ReplyCode } from './broker.error.js';
import { deliveredHeaders, isDeadLetterCycle, recordDeath, type BrokerMessage, type DeathReason, type DeathRules } from './dead-letter.rules.js';
import { bindingMatches, type ExchangeType, type MemoryBinding } from './exchange.routing.js';
import { MemoryQueue, type Enqueued, type QueueDeclaration } from './memory.queue.js';
import type { VirtualClock } from './virtual.clock.js';

/** An exchange of the in-memory broker. */
export interface MemoryExchange {
  name: string;
  type: ExchangeType;
  arguments: Record<string, unknown>;
}

/** Where a publish went. */
export interface RouteResult {
  queues: string[];
  /** A queue refused it (a length limit with `x-overflow: reject-publish`): the publisher's confirm is a nack. */
  refused: boolean;
}

const TYPES: ExchangeType[] = ['direct', 'topic', 'fanout', 'headers'];

/**
 * How long an at-least-once dead letter that a target refused (or that nothing routed) waits in its source queue
 * before RabbitMQ tries it again: its dead-letter worker's confirm timeout, 3 minutes by default (observed back after
 * about 3 minutes on 3.10.8 and 4.3.6).
 */
export const DEAD_LETTER_RETRY_MS = 180_000;
export const DIRECT_REPLY_QUEUE = 'amq.rabbitmq.reply-to';

/** A direct reply-to address as RabbitMQ hands them out: a pid in Erlang's term format and a key, each base64. */
export function replyAddress(): string {
  const node = Buffer.from('rabbit@memory');
  const pid = Buffer.concat([Buffer.from([131, 88, 119, node.length]), node, randomBytes(12)]);
  return `${DIRECT_REPLY_QUEUE}.${pid.toString('base64')}.${randomBytes(16).toString('base64')}`;
}

/**
 * The in-memory broker: exchanges (the built-in types, alternate exchanges, exchange-to-exchange bindings), queues
 * (TTLs expiring at the head; length limits; classic and quorum; single active consumer), dead-lettering with
 * `x-death` as RabbitMQ writes it (`rules`), and direct reply-to, on the virtual clock. It knows nothing of the library.
 */
export class MemoryBroker {
  readonly exchanges = new Map<string, MemoryExchange>(TYPES.map((type) => [`amq.${type}`, { name: `amq.${type}`, type, arguments: {} }]));
  readonly queues = new Map<string, MemoryQueue>();
  bindings: MemoryBinding[] = [];
  /** Direct reply-to addresses and who consumes each. */
  readonly replyConsumers = new Map<string, (message: BrokerMessage) => void>();
  private seq = 0;
  /** What it numbers from 1: its connections, and the consumer tags it names. */
  private readonly numbered = { connection: 0, consumerTag: 0 };

  constructor(
    readonly clock: VirtualClock,
    /** Whose dead-lettering it follows (dead-letter.rules.ts): RabbitMQ 3.13+/4.x by default. */
    readonly rules: DeathRules = 'current',
    /** Whether dead letters keep a quorum queue's delivery count (core keepsDeliveryCounts): RabbitMQ 4.0 to 4.2. */
    private readonly keepsDeliveryCount = false,
  ) {}

  /** The next number of a connection or of a consumer tag the broker names. */
  next(what: 'connection' | 'consumerTag'): number {
    return ++this.numbered[what];
  }

  assertExchange(name: string, type: string, args: Record<string, unknown>): void {
    if (name === '' || name.startsWith('amq.')) {
      if (name === '' || this.exchanges.has(name)) return;
      throw refusal('ACCESS_REFUSED', `exchange name '${name}' contains reserved prefix 'amq.*'`);
    }
    if (!TYPES.includes(type as ExchangeType)) throw refusal('COMMAND_INVALID', `invalid exchange type '${type}'`, true);
    const existing = this.exchanges.get(name);
    if (!existing) return void this.exchanges.set(name, { name, type: type as ExchangeType, arguments: { ...args } });
    if (existing.type !== type) {
      throw preconditionFailed(`inequivalent arg 'type' for exchange '${name}' in vhost '/': received '${type}' but current is '${existing.type}'`);
    }
    const ae = (a: Record<string, unknown>) => String(a['alternate-exchange'] ?? '');
    if (ae(existing.arguments) !== ae(args)) throw preconditionFailed(`inequivalent arg 'alternate-exchange' for exchange '${name}' in vhost '/'`);
  }

  checkExchange(name: string): void {
    if (name !== '' && !this.exchanges.has(name)) throw notFound('exchange', name);
  }

  /** Declares a queue (`''`: a server-named one) and returns it. `owner`: the declaring connection, for exclusive queues. */
  assertQueue(name: string, declaration: QueueDeclaration, owner: number): MemoryQueue {
    const queueName = name === '' ? `amq.gen-${randomBytes(16).toString('base64url')}` : name;
    const existing = this.queues.get(queueName);
    if (existing) {
      if (existing.owner !== undefined && existing.owner !== owner) {
        throw refusal('RESOURCE_LOCKED', `cannot obtain exclusive access to locked queue '${queueName}' in vhost '/'`);
      }
      const difference = existing.inequivalence(declaration);
      if (difference) throw preconditionFailed(difference);
      return existing;
    }
    if (name.startsWith('amq.')) throw refusal('ACCESS_REFUSED', `queue name '${name}' contains reserved prefix 'amq.*'`);
    const queue = new MemoryQueue(queueName, { ...declaration, arguments: { ...declaration.arguments } });
    if (declaration.exclusive) queue.owner = owner;
    this.queues.set(queueName, queue);
    return queue;
  }

  /** A queue by name; 404 when there is none. Direct reply-to addresses count as queues while their consumer lives. */
  queue(name: string): MemoryQueue {
    const queue = this.queues.get(name);
    if (queue) return queue;
    if (this.replyConsumers.has(name)) return new MemoryQueue(name, { durable: false, exclusive: true, autoDelete: true, arguments: {} });
    // RabbitMQ closes the connection over an address it cannot decode; a well-formed one whose consumer left is a 404.
    if (name.startsWith(`${DIRECT_REPLY_QUEUE}.`) && !/^amq\.rabbitmq\.reply-to\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+$/.test(name)) {
      throw new BrokerError(ReplyCode.INTERNAL_ERROR, `INTERNAL_ERROR`, true);
    }
    throw notFound('queue', name);
  }

  deleteQueue(name: string): number {
    const queue = this.queues.get(name);
    if (!queue) return 0;
    const count = queue.ready.length;
    this.queues.delete(name);
    this.bindings = this.bindings.filter((b) => !(b.destinationType === 'queue' && b.destination === name));
    for (const task of [queue.pumping, queue.expiry, ...queue.heldDeadLetters]) this.clock.cancel(task);
    return count;
  }

  bind(binding: MemoryBinding): void {
    this.checkExchange(binding.source);
    if (binding.source === '') throw refusal('ACCESS_REFUSED', 'operation not permitted on the default exchange');
    if (binding.destinationType === 'queue' && !this.queues.has(binding.destination)) throw notFound('queue', binding.destination);
    if (binding.destinationType === 'exchange' && !this.exchanges.has(binding.destination)) throw notFound('exchange', binding.destination);
    if (!this.bindings.some((b) => sameBinding(b, binding))) this.bindings.push({ ...binding, arguments: { ...binding.arguments } });
  }

  unbind(binding: MemoryBinding): void {
    this.bindings = this.bindings.filter((b) => !sameBinding(b, binding));
  }

  /** Routes and enqueues a message; 404 when the exchange does not exist. */
  publish(exchange: string, message: BrokerMessage): RouteResult {
    this.checkExchange(exchange);
    const queues = this.route(exchange, message.routingKeys, deliveredHeaders(message, this.rules));
    let refused = false;
    const took: string[] = [];
    for (const name of queues) {
      const reply = this.replyConsumers.get(name);
      if (reply) {
        this.clock.schedule(0, () => reply(message), { broker: true });
        took.push(name);
      } else if (this.enqueue(this.queues.get(name) as MemoryQueue, message)) took.push(name);
      else refused = true;
    }
    return { queues: took, refused };
  }

  /** The queues an exchange routes these routing keys and headers to, through alternate and bound exchanges. */
  route(exchange: string, routingKeys: readonly string[], headers: Record<string, unknown>, seen = new Set<string>()): Set<string> {
    const found = new Set<string>();
    if (exchange === '') {
      for (const key of routingKeys) if (this.queues.has(key) || this.replyConsumers.has(key)) found.add(key);
      return found;
    }
    const x = this.exchanges.get(exchange);
    if (!x || seen.has(exchange)) return found;
    seen.add(exchange);
    const matched = this.bindings.filter((b) => b.source === exchange && bindingMatches[x.type](b, routingKeys, headers));
    for (const b of matched) {
      if (b.destinationType === 'queue') found.add(b.destination);
      else for (const q of this.route(b.destination, routingKeys, headers, seen)) found.add(q);
    }
    const alternate = x.arguments['alternate-exchange'];
    if (matched.length === 0 && typeof alternate === 'string') {
      for (const q of this.route(alternate, routingKeys, headers, seen)) found.add(q);
    }
    return found;
  }

  /**
   * Puts a message in a queue; false when the queue refuses it (its length limit, `x-overflow: reject-publish`, or
   * `reject-publish-dlx`, which also dead-letters the refused message as `maxlen`).
   */
  enqueue(queue: MemoryQueue, message: BrokerMessage): boolean {
    const { maxLength } = queue;
    if (maxLength !== undefined && queue.full) {
      if (queue.overflow === 'reject-publish-dlx')
        this.deadLetter(queue, { message, seq: ++this.seq, redelivered: false, deliveryCount: 0 }, 'maxlen');
      if (queue.overflow !== 'drop-head') return false;
      const head = queue.ready.shift();
      if (head) this.deadLetter(queue, head, 'maxlen');
      if (maxLength === 0) return true;
    }
    const now = this.clock.now;
    const own = message.properties.expiration === undefined ? undefined : Number(message.properties.expiration);
    const ttl = [queue.messageTtl, own].filter((t): t is number => t !== undefined && Number.isFinite(t));
    const expiresAt = ttl.length > 0 ? now + Math.min(...ttl) : undefined;
    const carried = queue.type === 'quorum' ? (message.deliveryCount ?? 0) : 0;
    queue.insert({ message, seq: ++this.seq, expiresAt, redelivered: carried > 0, deliveryCount: 0, ...(carried > 0 && { carried }) });
    this.pump(queue);
    return true;
  }

  /** Gives a delivery back (a nack or reject with requeue, a closed channel): to its place, marked redelivered. */
  requeue(queueName: string, entry: Enqueued): void {
    const queue = this.queues.get(queueName);
    if (!queue) return;
    entry.redelivered = true;
    if (queue.type === 'quorum') {
      entry.deliveryCount++;
      const limit = queue.deliveryLimit(this.rules);
      if (limit !== undefined && limit >= 0 && entry.deliveryCount > limit) return this.deadLetter(queue, entry, 'delivery_limit');
    }
    queue.insert(entry);
    this.pump(queue);
  }

  /** A rejection without requeue: dead-lettered as `rejected`. */
  reject(queueName: string, entry: Enqueued): void {
    const queue = this.queues.get(queueName);
    if (queue) this.deadLetter(queue, entry, 'rejected');
  }

  /**
   * Dead-letters a message that left `queue` for `reason`: to the queue's `x-dead-letter-exchange` with its
   * `x-dead-letter-routing-key` (or the message's own routing keys), its death recorded (dead-letter.rules.ts). At most
   * once (classic queues, the default): dropped when the queue has no dead-letter exchange, the exchange does not
   * exist, or a target refuses it; the cycle rule drops it at a target too. At least once (a quorum queue with
   * `x-dead-letter-strategy: at-least-once`): what no target took, refused or unrouted, stays in the source queue and is
   * tried again every DEAD_LETTER_RETRY_MS, for the targets that have not taken it.
   */
  deadLetter(queue: MemoryQueue, entry: Enqueued, reason: DeathReason): void {
    const dlx = queue.args['x-dead-letter-exchange'];
    if (typeof dlx !== 'string') return;
    if (dlx !== '' && !this.exchanges.has(dlx) && !queue.deadLettersAtLeastOnce) return;
    const dead = recordDeath(entry.message, queue.name, reason, this.clock.now, this.rules);
    const key = queue.args['x-dead-letter-routing-key'];
    const message: BrokerMessage = { ...dead, exchange: dlx, routingKeys: typeof key === 'string' ? [key] : [...entry.message.routingKeys] };
    if (this.keepsDeliveryCount) {
      // The count it shows, one more for a rejection; a classic queue passes the count on as it came.
      const shown = entry.deliveryCount > 0 ? entry.deliveryCount : (entry.carried ?? 0);
      const own = queue.type === 'quorum' ? shown + (reason === 'rejected' ? 1 : 0) : (entry.message.deliveryCount ?? 0);
      if (own > 0) message.deliveryCount = own;
      else delete message.deliveryCount;
    }
    this.sendDeadLetter(queue, message, reason, new Set());
  }

  /** Enqueues a dead letter at every target not in `took` (adding those that take it); holds it in `source` when it must. */
  private sendDeadLetter(source: MemoryQueue, message: BrokerMessage, reason: DeathReason, took: Set<string>): void {
    const routable = message.exchange === '' || this.exchanges.has(message.exchange);
    const targets = routable ? this.route(message.exchange, message.routingKeys, deliveredHeaders(message, this.rules)) : new Set<string>();
    let kept = targets.size === 0;
    for (const target of targets) {
      const targetQueue = this.queues.get(target);
      if (took.has(target) || !targetQueue || isDeadLetterCycle(message, target, reason)) continue;
      if (this.enqueue(targetQueue, message)) took.add(target);
      else kept = true;
    }
    if (!kept || !source.deadLettersAtLeastOnce) return;
    const held = source.heldDeadLetters;
    const retry = this.clock.schedule(
      DEAD_LETTER_RETRY_MS,
      () => {
        held.delete(retry);
        if (this.queues.get(source.name) === source) this.sendDeadLetter(source, message, reason, took);
      },
      { broker: true },
    );
    held.add(retry);
  }

  /** Dead-letters the messages at the head of `queue` that have expired (RabbitMQ expires at the head only). */
  expireHead(queue: MemoryQueue): void {
    const now = this.clock.now;
    for (let head = queue.ready[0]; head?.expiresAt !== undefined && head.expiresAt <= now; head = queue.ready[0]) {
      queue.ready.shift();
      this.deadLetter(queue, head, 'expired');
    }
  }

  /** Delivers what the queue's consumers can take and expires what is due, in a task of the broker's own. */
  pump(queue: MemoryQueue): void {
    queue.pumping ??= this.clock.schedule(0, () => this.runPump(queue), { broker: true });
  }

  private runPump(queue: MemoryQueue): void {
    queue.pumping = undefined;
    if (this.queues.get(queue.name) !== queue) return;
    const now = this.clock.now;
    for (;;) {
      this.expireHead(queue);
      const head = queue.ready[0];
      const consumer = head && queue.nextConsumer();
      if (!consumer) break;
      queue.ready.shift();
      if (!consumer.noAck) consumer.unacked++;
      consumer.deliver(head);
    }
    this.clock.cancel(queue.expiry);
    const next = queue.ready[0]?.expiresAt;
    queue.expiry = next === undefined ? undefined : this.clock.schedule(next - now, () => this.pump(queue), { broker: true });
  }
}

const sameBinding = (a: MemoryBinding, b: MemoryBinding) => bindingKey(a) === bindingKey(b);
const bindingKey = (b: MemoryBinding) => JSON.stringify([b.source, b.destination, b.destinationType, b.pattern, b.arguments ?? {}]);
