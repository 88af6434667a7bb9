import type { ConsumeMessage } from 'amqplib';
import type { XDeath } from './x-death.parser.js';

/** The second argument of a `@RetryWithBackoff` handler. */
export interface RetryContext {
  /** 1 for the first delivery, 2 for the first retry, and so on. */
  attempt: number;
  maxAttempts: number;
  /** True when a failure now parks the message instead of retrying it. */
  isLastAttempt: boolean;
  /** The business queue the message came from. */
  queue: string;
  /** The delivery as amqplib gave it: fields, properties, raw content. */
  message: ConsumeMessage;
  /** The broker's `x-death` entries, parsed. */
  deaths: XDeath[];
  /**
   * Aborts when the delivery can no longer be settled (its channel or connection was lost: the broker redelivers the
   * message) or when `app.close()`'s shutdown timeout has passed. Pass it to fetch, database drivers and the like so
   * that a long handler stops early.
   */
  signal: AbortSignal;
}
