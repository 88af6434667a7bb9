import type { ConsumeMessage } from 'amqplib';
import { isObservable, lastValueFrom } from 'rxjs';
import type { ParkReason } from '../core/delivery/delivery.decision.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import type { XDeath } from '../core/delivery/x-death.parser.js';

// The delivery pipeline's contracts with what surrounds it: the adapters (nest, transport) give it an invoker,
// a policy or a router; the pipeline's own steps (handled-once, ordered) wrap the invoker.

/** Calls the user's handler (through Nest's context: interceptors, filters). */
export type HandlerInvoker = (payload: unknown, context: RetryContext) => Promise<unknown>;

/**
 * The mark of an invoker whose promise resolves to the handler's answer unread (the direct call of a method, see
 * nest/handler.invoker.ts): an Observable, which Nest would await to its last value, is read where the call's end is
 * acted on (the pipeline, or the chain before its steps) rather than in a promise reaction of its own on every message.
 */
const ANSWERS_UNREAD = Symbol('nestjs-amqp-retry.answers-unread');

/** Marks `invoke` as answering unread (see ANSWERS_UNREAD). */
export function answeringUnread(invoke: HandlerInvoker): HandlerInvoker {
  return Object.assign(invoke, { [ANSWERS_UNREAD]: true });
}

/** True for an invoker marked by answeringUnread: what acts on its call's end reads the answer with `answerOf`. */
export const answersUnread = (invoke: HandlerInvoker): boolean => (invoke as HandlerInvoker & { [ANSWERS_UNREAD]?: true })[ANSWERS_UNREAD] === true;

/** A handler's answer as Nest reads it: an Observable to its last value (one that emits nothing fails), else as it is. */
export const answerOf = (answer: unknown): unknown => (isObservable(answer) ? lastValueFrom(answer) : answer);

/** One step around the handler call, wrapping the invoker `next`; the steps and their order are in engine/delivery.chain.ts. */
export type Middleware = (next: HandlerInvoker) => HandlerInvoker;

/** The policy of one delivery: the queue's, or (a routed delivery) its pattern's own. */
export type PolicyOf = (context: RetryContext) => RetryPolicy;

/** How many attempts a message gets, and where its retries wait. */
export interface RetryPolicy {
  maxAttempts: number;
  /** Tier delays, tier 1 first; the last repeats. */
  delaysMs: number[];
  isRetryable: (error: unknown) => boolean;
  /** The longest one handler call may take, in ms (see withHandlerTimeout); 0 or absent: no limit. */
  timeoutMs?: number;
  /** The first tier of this policy's own schedule, when it is not the queue's: a first failure is published there. */
  firstTier?: string;
}

/**
 * What a queue whose messages differ in handler and policy (the transport's patterns) does with one readable
 * delivery: handle it with a policy; run it once and ack it whatever happens (a request: the caller waits, so no
 * tier retries); or park it before any handler runs (`notify` first tells whoever waits).
 */
export type DeliveryRoute =
  | {
      kind: 'handle';
      payload: unknown;
      policy: RetryPolicy;
      invoke: HandlerInvoker;
      /** The handler's own pattern, for observers (a metrics label): never a client's spelling of it. */
      pattern?: string;
    }
  /** A request, run once, its outcome answered to its caller; observed as one attempt of `pattern` (the handler's own). */
  | { kind: 'once'; run: (context: RetryContext) => Promise<RequestOutcome>; pattern?: string }
  | { kind: 'park'; reason: ParkReason; error: Error; notify?: () => Promise<void> };

/**
 * How a request's run ended: answered without an error, or failed with `error` (what the handler threw or its stream
 * ended with, a reply JSON cannot write, the request timeout, or the abandon at a stop).
 */
export type RequestOutcome = { answered: true } | { answered: false; error: unknown };

/** The outcome of every request answered without an error (one object, not one per request). */
export const ANSWERED: RequestOutcome = Object.freeze({ answered: true });

/** Chooses the route of a delivery from its decoded body (and its death history, which tells its first key); never throws. */
export type DeliveryRouter = (payload: unknown, message: ConsumeMessage, deaths: readonly XDeath[]) => DeliveryRoute;
