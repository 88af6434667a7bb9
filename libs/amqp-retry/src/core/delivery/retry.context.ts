import type { ConsumeMessage } from 'amqplib';
import type { XDeath } from './x-death.parser.js';

/**
 * The second argument of a `@RetryWithBackoff` handler. With an inbox, `RetryContext<Tx>` types its `transaction`:
 * a pg PoolClient, a TypeORM EntityManager, whatever the inbox's adapter hands out.
 * @example async handle(order: Order, ctx: RetryContext<PoolClient>) { await ctx.transaction.query('INSERT ...'); }
 */
export type RetryContext<Tx = undefined> = RetryContextBase &
  (undefined extends Tx
    ? {
        /** The inbox's transaction the handler runs in; absent without an inbox. */
        transaction?: Tx;
      }
    : {
        /** The inbox's transaction the handler runs in: it commits, with the message recorded as handled, before the ack. */
        transaction: Tx;
      });

/** What every handler call is given. */
export interface RetryContextBase {
  /** 1 for the first delivery, 2 for the first retry, and so on. */
  attempt: number;
  /** Handler calls in all, the first included: the last one's failure parks the message. */
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
   * message), when the call passes its time limit, or when `app.close()`'s shutdown timeout has passed (a queue handed
   * over to another instance leaves a running call alone until then). Pass it to fetch, database drivers and the like
   * so that a long handler stops early.
   */
  signal: AbortSignal;
}
