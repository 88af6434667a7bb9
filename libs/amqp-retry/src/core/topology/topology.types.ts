/** Classic queues, or replicated quorum queues (RabbitMQ 3.10+). */
export type QueueType = 'classic' | 'quorum';

/** What the library declares on the broker, in the order it must be declared. Everything is durable. */
export interface ExchangeDeclaration {
  /** The exchange's name. */
  name: string;
  /** Its type. */
  type: 'direct' | 'topic' | 'fanout' | 'headers' | 'x-consistent-hash';
  /** Its arguments (`alternate-exchange`...). */
  arguments?: Record<string, unknown>;
}

/** A queue the library declares (durable). */
export interface QueueDeclaration {
  /** The queue's name. */
  name: string;
  /** Its arguments: `x-queue-type`, `x-message-ttl`, `x-dead-letter-exchange`... */
  arguments: Record<string, unknown>;
}

/** A binding the library declares: a queue or exchange to an exchange, with a routing pattern. */
export interface BindingDeclaration {
  /** The exchange bound from. */
  source: string;
  /** The queue or exchange bound to. */
  destination: string;
  /** Whether `destination` is a queue or an exchange. */
  destinationType: 'queue' | 'exchange';
  /** The routing key or pattern of the binding. */
  pattern: string;
  /** A headers exchange's match (`x-match` and the headers). */
  arguments?: Record<string, unknown>;
}

/** Exchanges first, then queues (whose dead-letter exchanges then exist), then bindings. */
export interface TopologyPlan {
  /** The exchanges, declared first. */
  readonly exchanges: readonly ExchangeDeclaration[];
  /** The queues, declared once their dead-letter exchanges exist. */
  readonly queues: readonly QueueDeclaration[];
  /** The bindings, declared last. */
  readonly bindings: readonly BindingDeclaration[];
}
