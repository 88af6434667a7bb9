import type { ConsumeMessage } from 'amqplib';
import type { ReconnectPolicy } from '../core/connection/reconnect.policy.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { AmqpConnection } from './amqp.connection.js';

/** What a QueueConsumer is given: its queue and connection, and what it is told to do and to tell. */
export interface QueueConsumerOptions {
  queue: string;
  prefetch: number;
  connection: AmqpConnection;
  logger: RetryLogger;
  /** Spacing of the attempts to resume after the broker closed the channel or cancelled the consumer. */
  resume: ReconnectPolicy;
  /** Declares the queue's topology again before resuming (it may have been deleted). */
  redeclare: () => Promise<unknown>;
  /** The queue's arguments in the plan: after a cancel, a queue that refuses them (re-created otherwise) is not consumed. */
  queueArguments?: Record<string, unknown>;
  /** A delivery that may have crashed its process before: handled alone, so that a crash counts against it only (core/consumer/suspect.pace.ts). */
  isSuspect?: (message: ConsumeMessage) => boolean;
  /**
   * Whether the handler may wait aside from the consumer's gate (core/delivery/delivery.gate.ts waitAside): then each
   * delivery's message carries its pass while it runs. Absent: no message is given one.
   */
  waitsAside?: boolean;
  /** Told when the consumer goes up or down. */
  observers?: ObserverHub;
  /**
   * Set for a single-active-consumer queue: hold() and stop() hand the queue over as handOver() does (a hold waits
   * this long at most for the running handlers, then consumes on a fresh channel once released).
   */
  handOverMs?: number;
  /**
   * Told of each delivery given back unhandled by the close a hand-over ends in (a quorum queue counts the return):
   * one that waited for its turn, for its key, or between two attempts in place (core/delivery/hand-over.note.ts).
   */
  returned?: (message: ConsumeMessage) => void;
  /**
   * Called once a hand-over's handlers are done, right before its channel closes, and once more after the close (for
   * what arrived meanwhile): tells the next owner which returns were made on purpose. Its failure is logged.
   */
  handingOver?: () => Promise<void>;
}
