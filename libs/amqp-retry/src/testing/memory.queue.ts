import type { BrokerMessage, DeathRules } from './dead-letter.rules.js';
import type { Task } from './virtual.clock.js';

/** A message waiting in a queue. */
export interface Enqueued {
  message: BrokerMessage;
  /** Its place in the queue: a requeued message goes back to it. */
  seq: number;
  /** When it expires (ms since the epoch): the earlier of the queue's TTL and its own `expiration`; none: never. */
  expiresAt?: number;
  redelivered: boolean;
  /** Quorum queues: how many times it was delivered and given back (`x-delivery-count`). */
  deliveryCount: number;
  /** Quorum queues on 4.0 to 4.2: the count it came in with from an earlier queue, shown until it is given back. */
  carried?: number;
}

/** One consumer of a queue, as the queue sees it. */
export interface QueueConsumer {
  readonly tag: string;
  readonly noAck: boolean;
  /** At most this many unacknowledged deliveries (0: no limit). */
  readonly prefetch: number;
  unacked: number;
  /** Hands it a message (the channel writes the delivery). */
  deliver(entry: Enqueued): void;
}

/** How a queue was declared. */
export interface QueueDeclaration {
  durable: boolean;
  exclusive: boolean;
  autoDelete: boolean;
  arguments: Record<string, unknown>;
}

const numberArgument = (value: unknown): number | undefined => {
  const n = typeof value === 'object' && value !== null && 'value' in value ? Number((value as { value: unknown }).value) : Number(value);
  return value === undefined || value === null || !Number.isFinite(n) ? undefined : n;
};

/** A queue of the in-memory broker: its messages in order, its consumers, and the arguments it acts on. */
export class MemoryQueue {
  readonly ready: Enqueued[] = [];
  readonly consumers: QueueConsumer[] = [];
  private turn = 0;
  /** The exclusive owner's connection id, for an exclusive queue. */
  owner?: number;
  /** Whether a consumer ever consumed it (auto-delete queues go with their last consumer). */
  hadConsumer = false;
  /** The broker's tasks for it: its delivery pass, its next expiry, and its at-least-once dead letters waiting to be tried again. */
  pumping?: Task;
  expiry?: Task;
  readonly heldDeadLetters = new Set<Task>();

  constructor(
    readonly name: string,
    readonly declaration: QueueDeclaration,
  ) {}

  get args(): Record<string, unknown> {
    return this.declaration.arguments;
  }

  get type(): 'classic' | 'quorum' | 'stream' {
    const type = this.args['x-queue-type'];
    return type === 'quorum' || type === 'stream' ? type : 'classic';
  }

  get messageTtl(): number | undefined {
    return numberArgument(this.args['x-message-ttl']);
  }

  get maxLength(): number | undefined {
    return numberArgument(this.args['x-max-length']);
  }

  get overflow(): string {
    return String(this.args['x-overflow'] ?? 'drop-head');
  }

  /**
   * Whether a publish finds the queue full: a classic queue once it holds its `x-max-length`; a quorum queue that
   * refuses (`reject-publish`, `reject-publish-dlx`) only once it holds more than that, one message late (RabbitMQ
   * checks the limit before it counts the message it takes).
   */
  get full(): boolean {
    const { maxLength } = this;
    if (maxLength === undefined) return false;
    const late = this.type === 'quorum' && this.overflow !== 'drop-head';
    return late ? this.ready.length > maxLength : this.ready.length >= maxLength;
  }

  /**
   * Whether the queue dead-letters at least once: a quorum queue with `x-dead-letter-strategy: at-least-once` and
   * `x-overflow: reject-publish` (with any other overflow RabbitMQ falls back to at most once).
   */
  get deadLettersAtLeastOnce(): boolean {
    return this.type === 'quorum' && this.args['x-dead-letter-strategy'] === 'at-least-once' && this.overflow === 'reject-publish';
  }

  /**
   * A quorum queue's delivery limit under `rules`: its `x-delivery-limit`, else 20 with the rules of 3.13 and later
   * (RabbitMQ 4.0 set that default; 3.13, which had none, is not told apart), else none (3.10: no limit unless set).
   */
  deliveryLimit(rules: DeathRules): number | undefined {
    if (this.type !== 'quorum') return undefined;
    return numberArgument(this.args['x-delivery-limit']) ?? (rules === 'current' ? 20 : undefined);
  }

  get unackedCount(): number {
    return this.consumers.reduce((sum, consumer) => sum + consumer.unacked, 0);
  }

  /** Puts a message in at its place (a new one last, a requeued one back where it was). */
  insert(entry: Enqueued): void {
    let at = this.ready.length;
    while (at > 0 && this.ready[at - 1].seq > entry.seq) at--;
    this.ready.splice(at, 0, entry);
  }

  /** The consumer that takes the next delivery, or undefined when none can (prefetch full, or none there). */
  nextConsumer(): QueueConsumer | undefined {
    const candidates = this.args['x-single-active-consumer'] === true ? this.consumers.slice(0, 1) : this.consumers;
    for (let i = 0; i < candidates.length; i++) {
      const consumer = candidates[(this.turn + i) % candidates.length];
      if (consumer.noAck || consumer.prefetch === 0 || consumer.unacked < consumer.prefetch) {
        this.turn = (this.turn + i + 1) % Math.max(1, candidates.length);
        return consumer;
      }
    }
    return undefined;
  }

  removeConsumer(tag: string): void {
    const at = this.consumers.findIndex((consumer) => consumer.tag === tag);
    if (at >= 0) this.consumers.splice(at, 1);
  }

  /** A redeclaration's first argument that differs, worded as RabbitMQ's 406; undefined when equivalent. */
  inequivalence(declaration: QueueDeclaration): string | undefined {
    const describe = (value: unknown) =>
      value === undefined ? 'none' : `the value '${String(value)}' of type '${typeof value === 'number' ? 'signedint' : 'longstr'}'`;
    const keys = new Set([...Object.keys(this.args), ...Object.keys(declaration.arguments)]);
    for (const key of keys) {
      const current = key === 'x-queue-type' ? (this.args[key] ?? 'classic') : this.args[key];
      const received = key === 'x-queue-type' ? (declaration.arguments[key] ?? 'classic') : declaration.arguments[key];
      if (String(current) !== String(received)) {
        return `inequivalent arg '${key}' for queue '${this.name}' in vhost '/': received ${describe(received)} but current is ${describe(current)}`;
      }
    }
    if (this.declaration.durable !== declaration.durable) {
      return `inequivalent arg 'durable' for queue '${this.name}' in vhost '/': received '${declaration.durable}' but current is '${this.declaration.durable}'`;
    }
    return undefined;
  }
}
