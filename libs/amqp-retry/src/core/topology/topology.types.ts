/** Classic queues, or replicated quorum queues (RabbitMQ 3.10+). */
export type QueueType = 'classic' | 'quorum';

/** What the library declares on the broker, in the order it must be declared. Everything is durable. */
export interface ExchangeDeclaration {
  name: string;
  type: 'direct' | 'topic' | 'fanout' | 'headers' | 'x-consistent-hash';
  arguments?: Record<string, unknown>;
}

export interface QueueDeclaration {
  name: string;
  arguments: Record<string, unknown>;
}

export interface BindingDeclaration {
  source: string;
  destination: string;
  destinationType: 'queue' | 'exchange';
  pattern: string;
  /** A headers exchange's match (`x-match` and the headers). */
  arguments?: Record<string, unknown>;
}

/** Exchanges first, then queues (whose dead-letter exchanges then exist), then bindings. */
export interface TopologyPlan {
  readonly exchanges: readonly ExchangeDeclaration[];
  readonly queues: readonly QueueDeclaration[];
  readonly bindings: readonly BindingDeclaration[];
}
