import type { DeadLetterAction } from '../config/queue-limits.config.js';
import { BrokerHeader } from '../headers/header.names.js';
import { DEATHS_TO_SORT_OUT } from '../topology/retry-topology.plan.js';
import { readDeathHistory, rejectedCount, type XDeath } from './x-death.parser.js';

/** What the dead-letter queue's consumer does with a message (see retry-topology.plan.ts, Q.dlx.dead). */
export type DeadLetterOutcome =
  | { action: 'park'; reason: 'expired' | 'maxlen' | 'redelivery-limit' | 'malformed'; error: Error; handlerCalls: number }
  | { action: 'drop'; reason: 'expired' | 'maxlen'; handlerCalls: number }
  /** A first failure in the queue that the sort took for a death of another kind: it goes on to tier 1 (see decideDeadLetter). */
  | { action: 'retry'; handlerCalls: number };

/** The broker's reason of a death in `queue`, from the death headers: the last death (3.13+) first, else the first. */
function deathReasonIn(headers: Record<string, unknown> | undefined, queue: string): string | undefined {
  const reasonIf = (queueHeader: string, reasonHeader: string) => {
    const reason = headers?.[reasonHeader];
    return headers?.[queueHeader] === queue && typeof reason === 'string' ? reason : undefined;
  };
  return reasonIf(BrokerHeader.lastDeathQueue, BrokerHeader.lastDeathReason) ?? reasonIf(BrokerHeader.firstDeathQueue, BrokerHeader.firstDeathReason);
}

/**
 * The newest death of a message: `x-last-death-*` (RabbitMQ 3.13+), else the head of `x-death`, where the broker puts a
 * death of a queue and reason the history did not hold yet.
 */
function newestDeath(headers: Record<string, unknown> | undefined, deaths: readonly XDeath[]): { queue: unknown; reason: unknown } | undefined {
  const queue = headers?.[BrokerHeader.lastDeathQueue];
  const reason = headers?.[BrokerHeader.lastDeathReason];
  return typeof queue === 'string' && typeof reason === 'string' ? { queue, reason } : deaths[0];
}

/**
 * Whether the sort sent here a first failure for an old death: its first death in the queue is one the sort takes
 * (`x-first-death-*` never change), and its newest death is the queue's first rejection of it (counted once). A
 * message that failed before, or claims a rejection its history does not hold, is no such failure.
 */
function isFirstFailureAfterOldDeath(headers: Record<string, unknown> | undefined, deaths: readonly XDeath[], queue: string): boolean {
  const newest = newestDeath(headers, deaths);
  const firstReason = headers?.[BrokerHeader.firstDeathReason];
  return (
    newest?.queue === queue &&
    newest.reason === 'rejected' &&
    rejectedCount(deaths, queue) === 1 &&
    headers?.[BrokerHeader.firstDeathQueue] === queue &&
    (DEATHS_TO_SORT_OUT as readonly unknown[]).includes(firstReason)
  );
}

/**
 * Which of the queues `isOurs` takes a dead letter died in (the last death first, 3.13+): a partitioned handler's
 * partitions share one dead-letter queue.
 */
export function deathQueueOf(headers: Record<string, unknown> | undefined, isOurs: (queue: string) => boolean): string | undefined {
  const last = headers?.[BrokerHeader.lastDeathQueue];
  if (typeof last === 'string' && isOurs(last)) return last;
  const first = headers?.[BrokerHeader.firstDeathQueue];
  return typeof first === 'string' && isOurs(first) ? first : undefined;
}

/**
 * Decides what becomes of a message in a handler queue's dead-letter queue: expired or pushed out by the length limit,
 * it is parked or dropped as `onExpired` says; past a quorum queue's delivery limit, parked as `redelivery-limit`;
 * a first failure is sent on to tier 1 (`retry`); anything else (published there) is parked as malformed. Never throws.
 *
 * The sort that sends messages here binds on `x-first-death-*` too, which never change: a message that once expired
 * in the queue and was moved back into it (by a shovel, or an operator's move) comes here again at its next first
 * failure. Its newest death, the queue's first rejection of it, tells such a failure from a death of its own. On
 * RabbitMQ 3.10, which counts a death it held already without moving it to the head of `x-death`, a message moved back
 * twice and then expired in the queue still shows that rejection at the head: it is taken for a first failure.
 * @example decideDeadLetter({ 'x-first-death-queue': 'orders', 'x-first-death-reason': 'expired' }, 'orders', 'park').reason // 'expired'
 */
export function decideDeadLetter(headers: Record<string, unknown> | undefined, queue: string, onExpired: DeadLetterAction): DeadLetterOutcome {
  const history = readDeathHistory(headers?.[BrokerHeader.death]);
  const handlerCalls = history.ok ? rejectedCount(history.deaths, queue) : 0;
  const reason = deathReasonIn(headers, queue);
  // The death headers route a message here, and a publisher can set them (RabbitMQ 3.x keeps a client's x-first-death-*):
  // the broker's own x-death must hold the death they name, or they are not the broker's.
  if (reason !== undefined && reason !== 'rejected' && !(history.ok && history.deaths.some((d) => d.queue === queue && d.reason === reason))) {
    const error = new Error(
      `its death headers say it died in "${queue}" (${reason}), but its x-death has no such death: they were published with it, not written by the broker; parked so that it is not taken for what it claims`,
    );
    return { action: 'park', reason: 'malformed', error, handlerCalls };
  }
  if (history.ok && isFirstFailureAfterOldDeath(headers, history.deaths, queue)) return { action: 'retry', handlerCalls };
  if (reason === 'expired' || reason === 'maxlen') {
    if (onExpired === 'drop') return { action: 'drop', reason, handlerCalls };
    // The history is the broker's here (checked above); its expiry entry in the queue kept the message's own expiration.
    const expiration = history.ok
      ? history.deaths.find((d) => d.queue === queue && d.reason === 'expired' && d.originalExpiration !== undefined)?.originalExpiration
      : undefined;
    const error = new Error(
      reason === 'expired'
        ? `expired in "${queue}" before a handler took it (${expiration === undefined ? "the queue's message TTL" : `its expiration of ${expiration} ms`})`
        : `pushed out of "${queue}" by the queue's length limit (x-max-length or x-max-length-bytes), or refused by it (overflow reject-publish-dlx)`,
    );
    return { action: 'park', reason, error, handlerCalls };
  }
  if (reason === 'delivery_limit') {
    const error = new Error(`passed the quorum queue's delivery limit in "${queue}": delivered that many times without being settled`);
    return { action: 'park', reason: 'redelivery-limit', error, handlerCalls };
  }
  const error = new Error(
    `reached the dead-letter queue of "${queue}" without a death there the broker wrote (x-first-death-queue or x-last-death-queue): it was published there directly`,
  );
  return { action: 'park', reason: 'malformed', error, handlerCalls };
}
