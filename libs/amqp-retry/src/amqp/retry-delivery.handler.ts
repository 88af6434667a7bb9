import type { ConsumeMessage } from 'amqplib';
import { decideAfterFailure, decideBeforeHandling, type ParkReason } from '../core/delivery.decision.js';
import { firstFailureHeaders, movedFirstFailures } from '../core/first-failure.js';
import { retryNames } from '../core/retry-topology.plan.js';
import { formatDuration } from '../core/duration.js';
import { errorMessage } from '../core/error-message.js';
import type { HandlerConfig } from '../core/handler-config.js';
import type { RetryContext } from '../core/retry-context.js';
import type { RetryLogger } from '../core/retry-logger.js';
import type { XDeath } from '../core/x-death.parser.js';
import { type MessageParker, type ParkTarget, pause, PARK_RETRY } from './message.parker.js';
import type { Settle } from './queue.consumer.js';
import type { TopologyGuard } from './topology.guard.js';
import { reconnectDelay } from '../core/reconnect.policy.js';
import { DeliveryObservation } from '../observability/delivery.observation.js';
import type { ObserverHub } from '../observability/observer-hub.js';

/** Calls the user's handler (through Nest's context: interceptors, filters). */
export type HandlerInvoker = (payload: unknown, context: RetryContext) => Promise<unknown>;

/** How many attempts a message gets, and where its retries wait. */
export interface RetryPolicy {
  maxAttempts: number;
  /** Tier delays, tier 1 first; the last repeats. */
  delaysMs: number[];
  isRetryable: (error: unknown) => boolean;
  /**
   * The first tier of this policy's own schedule, when it is not the queue's: a first failure is published there
   * (see core/first-failure.ts). Absent: the queue's schedule, reached by a nack.
   */
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
  | { kind: 'once'; run: (context: RetryContext) => Promise<void> }
  | { kind: 'park'; reason: ParkReason; error: Error; notify?: () => Promise<void> };

/** Chooses the route of a delivery from its decoded body (and its death history, which tells its first key); never throws. */
export type DeliveryRouter = (payload: unknown, message: ConsumeMessage, deaths: readonly XDeath[]) => DeliveryRoute;

/**
 * What a handler queue does with each delivery. Success acks; a retryable failure nacks without requeue, so the
 * broker moves the message through the tiers (once the guard has made sure they exist); anything else is parked
 * (published to the error queue and confirmed) and only then acked. A delivery that cannot be read (body, death
 * history) is parked before the handler or any nack sees it. With a router, the policy is the route's.
 */
export class RetryDeliveryHandler {
  constructor(
    private readonly config: HandlerConfig,
    private readonly invoke: HandlerInvoker,
    private readonly parker: MessageParker,
    private readonly park: ParkTarget,
    private readonly guard: TopologyGuard,
    private readonly logger: RetryLogger,
    private readonly router?: DeliveryRouter,
    private readonly observers?: ObserverHub,
  ) {}

  /** Not async itself: the usual delivery (decoded, handled, acked) costs one promise reaction, not an async frame. */
  readonly handle = (message: ConsumeMessage, settle: Settle, signal: AbortSignal): Promise<void> => {
    const { queue, queueType, deserializer } = this.config;
    // With a router, the attempts allowed are known only once the body names the route.
    const before = decideBeforeHandling({ message, queue, maxAttempts: this.router ? Infinity : this.config.maxAttempts, queueType, deserializer });
    if (before.action === 'park') {
      const { reason, error, handlerCalls, deaths } = before;
      return this.parker.park(message, settle, this.park, { queue, deaths, reason, error, handlerCalls }, signal);
    }
    if (this.router) return this.routed(this.router, message, settle, signal, before.payload, before.attempt, before.deaths);
    return this.attempt(
      message,
      settle,
      signal,
      { payload: before.payload, policy: this.config, invoke: this.invoke },
      before.attempt,
      before.deaths,
    );
  };

  /** A delivery of a queue whose messages differ in handler and policy: its route decides. */
  private async routed(
    router: DeliveryRouter,
    message: ConsumeMessage,
    settle: Settle,
    signal: AbortSignal,
    payload: unknown,
    firstAttempt: number,
    deaths: XDeath[],
  ): Promise<void> {
    const { queue } = this.config;
    const route = router(payload, message, deaths);
    if (route.kind === 'park') {
      await route.notify?.().catch((error: unknown) => this.logger.error(`"${queue}": ${errorMessage(error)}`));
      return this.parker.park(message, settle, this.park, { queue, deaths, reason: route.reason, error: route.error, handlerCalls: 0 }, signal);
    }
    if (route.kind === 'once') {
      const context = { attempt: firstAttempt, maxAttempts: 1, isLastAttempt: true, queue, message, deaths, signal };
      await route.run(context).catch((error: unknown) => this.logger.error(`"${queue}": ${errorMessage(error)}`));
      return settle.ack();
    }
    const attempt = firstAttempt + movedFirstFailures(message.properties.headers as Record<string, unknown> | undefined, queue, deaths);
    if (attempt > route.policy.maxAttempts) {
      const error = new Error(`already had ${attempt - 1} attempts, and maxAttempts is ${route.policy.maxAttempts}`);
      const { pattern } = route;
      return this.parker.park(message, settle, this.park, { queue, pattern, deaths, reason: 'exhausted', error, handlerCalls: attempt - 1 }, signal);
    }
    return this.attempt(message, settle, signal, route, attempt, deaths);
  }

  /** Calls the handler once: acks on success, else retries or parks (see `failed`). */
  private attempt(
    message: ConsumeMessage,
    settle: Settle,
    signal: AbortSignal,
    { payload, policy, invoke, pattern }: { payload: unknown; policy: RetryPolicy; invoke: HandlerInvoker; pattern?: string },
    attempt: number,
    deaths: XDeath[],
  ): Promise<void> {
    const { queue } = this.config;
    const { maxAttempts } = policy;
    const context: RetryContext = { attempt, maxAttempts, isLastAttempt: attempt >= maxAttempts, queue, message, deaths, signal };
    const observed = this.observers?.active
      ? new DeliveryObservation(this.observers, { queue, pattern, attempt, maxAttempts, message, deaths })
      : undefined;
    let running: Promise<unknown>;
    try {
      running = observed ? observed.run(() => invoke(payload, context)) : invoke(payload, context);
    } catch (error) {
      return this.failed(message, settle, signal, { policy, pattern, attempt, deaths, observed }, error);
    }
    // Promise.resolve: an invoker that answers a plain value (from JavaScript) still settles the message.
    return Promise.resolve(running).then(
      () => {
        observed?.handled();
        settle.ack();
      },
      (error: unknown) => this.failed(message, settle, signal, { policy, pattern, attempt, deaths, observed }, error),
    );
  }

  /** The handler failed: another attempt through the tiers (once they are known to exist), or the error queue. */
  private async failed(
    message: ConsumeMessage,
    settle: Settle,
    signal: AbortSignal,
    {
      policy,
      pattern,
      attempt,
      deaths,
      observed,
    }: { policy: RetryPolicy; pattern?: string; attempt: number; deaths: XDeath[]; observed?: DeliveryObservation },
    error: unknown,
  ): Promise<void> {
    const { queue } = this.config;
    const { maxAttempts, delaysMs } = policy;
    const after = decideAfterFailure(attempt, maxAttempts, policy.isRetryable(error), delaysMs.length, error);
    observed?.failed(error, after.action === 'retry' ? after.tier : undefined, after.action === 'retry' ? delaysMs[after.tier - 1] : undefined);
    if (after.action === 'park') {
      const handlerCalls = after.reason === 'malformed' ? attempt - 1 : attempt;
      return this.parker.park(message, settle, this.park, { queue, pattern, deaths, reason: after.reason, error, handlerCalls }, signal);
    }
    if (!(await this.guarded(signal))) return; // the channel is gone: the broker redelivers the message
    const line = `"${queue}" attempt ${attempt}/${maxAttempts} failed: ${errorMessage(error)}; retrying in ${formatDuration(delaysMs[after.tier - 1])}`;
    if (this.config.failureLogs === 'line') this.logger.warn(line);
    else this.logger.debug(line);
    if (policy.firstTier !== undefined && attempt === 1) return this.moveToFirstTier(message, settle, policy.firstTier, signal);
    return settle.nack(false);
  }

  /** A first failure of a schedule that is not the queue's: published into its first tier through the dead-letter exchange. */
  private async moveToFirstTier(message: ConsumeMessage, settle: Settle, tier: string, signal: AbortSignal): Promise<void> {
    const { queue } = this.config;
    const headers = firstFailureHeaders(message.properties.headers as Record<string, unknown> | undefined, queue, message.fields);
    const to = { exchange: retryNames(queue).deadLetterExchange, routingKey: tier, headers, queue };
    await this.parker.move(message, settle, to, this.park.redeclare, signal);
  }

  /** Waits until the retry topology is known to exist, trying again with backoff; false if the delivery's channel died first. */
  private async guarded(signal: AbortSignal): Promise<boolean> {
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        await this.guard.ensure();
        return true;
      } catch (error) {
        const delay = reconnectDelay(attempt, PARK_RETRY);
        this.logger.error(`"${this.config.queue}": ${errorMessage(error)}; the failed message waits, trying again in ${delay} ms`);
        await pause(delay, signal);
      }
    }
    return false;
  }
}
