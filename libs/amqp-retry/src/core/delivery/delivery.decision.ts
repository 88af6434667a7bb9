import type { ConsumeMessage } from 'amqplib';
import { IdempotencyStoreError } from '../../errors/idempotency-store.error.js';
import { MalformedMessageError } from '../../errors/malformed-message.error.js';
import { NonRetryableError } from '../../errors/non-retryable.error.js';
import { decodeBody, type Deserializer } from '../message/body.decoder.js';
import { headersOf } from '../message/message.properties.js';
import type { QueueType } from '../topology/topology.types.js';
import { brokerDeliveryCount, carriedCount, countedHeaders, unsettledDeliveries } from './delivery.count.js';
import { movedFirstFailures } from './first-failure.headers.js';
import { readDeathHistory, rejectedCount, type XDeath } from './x-death.parser.js';
import { BrokerHeader } from '../headers/header.names.js';

/** A constructor of an error class, for `nonRetryable`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- constructor arguments are the error's own business
export type ErrorClass = new (...args: any[]) => Error;

/**
 * Why a message was parked, as written to `x-parked-reason`. `malformed`: its body, `x-death` or delay target headers
 * could not be read; `undeliverable`: a delayed message's target exchange is gone; `redelivery-limit`: a quorum queue
 * delivered it REDELIVERY_LIMIT times unsettled; `no-handler`: no transport handler takes its pattern; `expired`: its
 * own `expiration` or its queue's message TTL ran out; `maxlen`: its queue's length limit pushed it out or refused it.
 */
export type ParkReason = 'exhausted' | 'non-retryable' | 'malformed' | 'undeliverable' | 'redelivery-limit' | 'no-handler' | 'expired' | 'maxlen';

/**
 * Unsettled deliveries (a handler that crashes its process or channel every time) at which a quorum queue's message is
 * parked instead of handled again. The queues' own `x-delivery-limit` is higher (QUORUM_DELIVERY_LIMIT), so the library
 * acts before the broker, whose dead-lettering into the tiers would end with the dead-letter cycle rule dropping it.
 */
export const REDELIVERY_LIMIT = 10;
export const QUORUM_DELIVERY_LIMIT = 2 * REDELIVERY_LIMIT;

/** What decideBeforeHandling needs to know of a delivery and its handler. */
export interface BeforeHandlingInput {
  /** The delivery as amqplib gave it; its body, content type and headers are read. */
  message: ConsumeMessage;
  /** The handler's business queue, whose `rejected` entry in `x-death` counts the attempts. */
  queue: string;
  maxAttempts: number;
  /** Decides whether `x-delivery-count` is trusted (quorum) or ignored (classic: publishers can set it). */
  queueType: QueueType;
  /** How the body becomes the payload; default 'json'. */
  deserializer?: Deserializer;
  /** The returns of this delivery the application made on purpose (see OwnReturns); asked only when the broker counts any. */
  ownReturns?: (deaths: readonly XDeath[]) => number;
  /** The broker keeps a quorum queue's delivery count through dead-lettering (keepsDeliveryCounts): RabbitMQ 4.0 to 4.2. */
  keepsDeliveryCounts?: boolean;
}

/** What happens to a delivery before the handler runs. `deaths` is empty when the header was malformed. */
export type BeforeHandling =
  | { action: 'handle'; payload: unknown; attempt: number; deaths: XDeath[] }
  | { action: 'park'; reason: ParkReason; error: Error; handlerCalls: number; deaths: XDeath[] };

/**
 * Decides whether a delivery reaches the handler. In order, it is parked: as malformed, for an `x-death` the broker did
 * not write; as `redelivery-limit` (quorum only); as exhausted (maxAttempts lowered since it failed); as malformed, for
 * a body the deserializer cannot read. The attempt number is 1 + the count of the queue's `rejected` entry, + 1 for a
 * first failure moved into a tier by a publish (movedFirstFailures). Never throws.
 */
export function decideBeforeHandling(input: BeforeHandlingInput): BeforeHandling {
  const { message, queue, maxAttempts } = input;
  const headers = headersOf(message.properties);
  const header = headers[BrokerHeader.death];
  let deaths: XDeath[] = [];
  let attempt = 1;
  // A message that never died (the usual first delivery) has no history to read, and was moved into no tier.
  if (header !== undefined) {
    // First, before anything that could nack: a forged history must never be dead-lettered again (see readDeathHistory).
    const history = readDeathHistory(header);
    if (!history.ok) {
      const error = new Error(
        `the x-death header is malformed: ${history.problem}. Only the broker writes it, so the attempt number is unknown; the message is parked so that it is never dead-lettered again (find what publishes it with that header)`,
      );
      return { action: 'park', reason: 'malformed', error, handlerCalls: 0, deaths: [] };
    }
    deaths = history.deaths;
    attempt = 1 + rejectedCount(deaths, queue) + movedFirstFailures(headers, queue, deaths);
  }
  const early = earlyPark(attempt, maxAttempts, unsettledOf(input, deaths));
  if (early !== undefined) return { ...early, deaths };
  const body = decodeBody(message, input.deserializer);
  if (!body.ok) return { action: 'park', reason: 'malformed', error: new Error(body.problem), handlerCalls: attempt - 1, deaths };
  return { action: 'handle', payload: body.payload, attempt, deaths };
}

/** A delivery the broker never counted a return of. */
const NEVER_RETURNED: Unsettled = { count: 0, own: 0, atBrokerLimit: false };

/** A delivery's unsettled deliveries as the decision counts them. */
interface Unsettled {
  /** The broker's count, less the returns the application made on purpose. */
  count: number;
  /** Of the broker's count, the returns the application made on purpose (a pause, an open circuit). */
  own: number;
  /** The broker's own x-delivery-count is so close to the queue's delivery limit that one more return passes it. */
  atBrokerLimit: boolean;
}

/**
 * Unsettled deliveries (quorum only) less the application's own returns, never discounted past QUORUM_DELIVERY_LIMIT;
 * on a broker that keeps counts through dead-lettering, less the count it carried in (carriedCount).
 */
function unsettledOf(input: BeforeHandlingInput, deaths: readonly XDeath[]): Unsettled {
  const headers = countedHeaders(input.message);
  const carried = input.keepsDeliveryCounts ? carriedCount(headers, input.queueType, rejectedCount(deaths, input.queue)) : 0;
  const counted = unsettledDeliveries(headers, input.queueType, carried);
  if (counted === 0) return NEVER_RETURNED; // the usual delivery was never returned: no count to weigh, nothing allocated
  const own = input.ownReturns ? Math.min(counted, input.ownReturns(deaths)) : 0;
  if (own === 0) return { count: counted, own, atBrokerLimit: false };
  const count = unsettledDeliveries(headers, input.queueType, own + carried);
  return { count, own, atBrokerLimit: brokerDeliveryCount(headers, input.queueType) - carried >= QUORUM_DELIVERY_LIMIT - 1 };
}

type EarlyPark = Omit<Extract<BeforeHandling, { action: 'park' }>, 'deaths'>;

/** The parks that come before the body is read: too many unsettled deliveries (quorum only), then no attempts left. */
function earlyPark(attempt: number, maxAttempts: number, unsettled: Unsettled): EarlyPark | undefined {
  const { count, own, atBrokerLimit } = unsettled;
  if (count >= REDELIVERY_LIMIT || atBrokerLimit) {
    const error = new Error(
      atBrokerLimit
        ? `delivered ${count + own} times without being settled, ${own} of them put back while its queue was paused or its circuit open: the next return would pass the queue's delivery limit (${QUORUM_DELIVERY_LIMIT}), past which the broker drops it`
        : `delivered ${count} times without being settled (the broker's x-delivery-count or x-acquired-count${own > 0 ? `, less ${own} returns while its queue was paused or its circuit open` : ''}): the handler may crash its process, or outlive the consumer timeout`,
    );
    return { action: 'park', reason: 'redelivery-limit', error, handlerCalls: attempt - 1 + count };
  }
  const exhausted = exhaustedBeforeHandling(attempt, maxAttempts);
  return exhausted && { action: 'park', ...exhausted };
}

/** The one test of "no attempts left": before attempt n runs `attemptsMade` is n - 1; after attempt n failed, n. */
export const isExhausted = (attemptsMade: number, maxAttempts: number): boolean => attemptsMade >= maxAttempts;

/** Before attempt `attempt` (1-based) runs: the park of a message that already had every attempt, else undefined. */
export function exhaustedBeforeHandling(attempt: number, maxAttempts: number): Omit<EarlyPark, 'action'> | undefined {
  if (!isExhausted(attempt - 1, maxAttempts)) return undefined;
  const error = new Error(`already had ${attempt - 1} attempts, and maxAttempts is ${maxAttempts}`);
  return { reason: 'exhausted', error, handlerCalls: attempt - 1 };
}

/** What happens to a delivery whose handler failed. */
export type AfterFailure = { action: 'retry'; tier: number } | { action: 'park'; reason: ParkReason };

/** Another attempt (tier n after attempt n, the last tier repeating) or a park; a MalformedMessageError parks at once. */
export function decideAfterFailure(attempt: number, maxAttempts: number, retryable: boolean, tiers: number, error?: unknown): AfterFailure {
  if (isMalformed(error)) return { action: 'park', reason: 'malformed' };
  if (!retryable) return { action: 'park', reason: 'non-retryable' };
  if (isExhausted(attempt, maxAttempts)) return { action: 'park', reason: 'exhausted' };
  return { action: 'retry', tier: Math.min(attempt, tiers) };
}

/** `instanceof` that a thrown Proxy (a getPrototypeOf trap that throws) cannot turn into a throw. */
function isMalformed(error: unknown): boolean {
  try {
    return error instanceof MalformedMessageError;
  } catch {
    return false;
  }
}

/**
 * Builds the retryability test of a handler. NonRetryableError always parks; IdempotencyStoreError (the store is
 * down) always retries; a predicate that throws, or a thrown value that cannot even be asked its class, counts as
 * "retryable", so a bug costs attempts, never a message.
 */
export function retryabilityOf(nonRetryable?: ErrorClass[] | ((error: unknown) => boolean)): (error: unknown) => boolean {
  const classes = nonRetryable ?? [];
  const matches = typeof classes === 'function' ? classes : (error: unknown) => classes.some((errorClass) => error instanceof errorClass);
  return (error) => {
    try {
      return error instanceof IdempotencyStoreError || (!(error instanceof NonRetryableError) && !matches(error));
    } catch {
      return true;
    }
  };
}
