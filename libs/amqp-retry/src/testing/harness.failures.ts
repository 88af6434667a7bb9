import type { PublishRecord } from './memory.channel.js';
import type { MemoryConnection } from './memory.connection.js';

/** Which publishes a refusal applies to: all, or those to an exchange or routing key, or those a predicate picks. */
export type PublishMatcher =
  | {
      /** Only publishes to this exchange. */
      exchange?: string;
      /** Only publishes with this routing key. */
      routingKey?: string;
    }
  | ((publish: PublishRecord) => boolean);

const matches = (matcher: PublishMatcher | undefined, publish: PublishRecord): boolean =>
  typeof matcher === 'function'
    ? matcher(publish)
    : (['exchange', 'routingKey'] as const).every((key) => matcher?.[key] === undefined || matcher[key] === publish[key]);

/**
 * Failures a test injects into the in-memory broker, to see how the application reacts: a publisher confirm refused
 * (a nack, as RabbitMQ sends when it cannot take a message), the connections lost, new connections refused.
 */
export class HarnessFailures {
  private refusals: { left: number; matcher?: PublishMatcher }[] = [];
  private refusingUntil = -Infinity;

  /** @internal */
  constructor(
    private readonly connections: () => readonly MemoryConnection[],
    private readonly now: () => number,
    /** Told, before connections are lost, so that settle() waits for the application to consume again. */
    private readonly beforeLoss: () => void,
  ) {}

  /**
   * The next `count` publishes that match are refused: their confirm is a nack (`message nacked` in amqplib), and the
   * broker routes them nowhere (no queue takes them). A predicate sees the publish before routing (`queues` empty).
   */
  refuseConfirms(count = 1, matcher?: PublishMatcher): void {
    this.refusals.push({ left: count, matcher });
  }

  /**
   * Every open connection is lost (as when the network drops): channels close, unacknowledged deliveries go back to
   * their queues, and the library reconnects with its backoff. `refuseForMs`: new connections fail for that long of
   * virtual time (advance the clock past it).
   */
  loseConnections(refuseForMs = 0): void {
    if (refuseForMs > 0) this.refuseConnections(refuseForMs);
    this.beforeLoss();
    for (const connection of this.connections()) connection.lose('Unexpected close');
  }

  /** New connections fail for `ms` of virtual time from now. */
  refuseConnections(ms: number): void {
    this.refusingUntil = this.now() + ms;
  }

  /** Drops every injected failure still waiting. */
  clear(): void {
    this.refusals = [];
    this.refusingUntil = -Infinity;
  }

  /** @internal Whether a new connection is refused now. */
  connectRefused(): boolean {
    return this.now() < this.refusingUntil;
  }

  /** @internal Whether this publish's confirm is a nack; counts the refusal down. */
  refuses(publish: PublishRecord): boolean {
    const refusal = this.refusals.find((r) => r.left > 0 && matches(r.matcher, publish));
    if (!refusal) return false;
    refusal.left--;
    this.refusals = this.refusals.filter((r) => r.left > 0);
    return true;
  }
}
