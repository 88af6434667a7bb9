import { performance } from 'node:perf_hooks';
import type { ConsumeMessage } from 'amqplib';
import { isObservable, lastValueFrom, type Observable } from 'rxjs';
import { decideAfterFailure, decideBeforeHandling, exhaustedBeforeHandling, isExhausted } from '../core/delivery/delivery.decision.js';
import { formatDuration } from '../core/time/duration.reader.js';
import { errorMessage } from '../core/text/error-message.format.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { XDeath } from '../core/delivery/x-death.parser.js';
import { DeliveryObservation } from '../core/observe/delivery.observation.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { Settle } from '../amqp/queue.consumer.js';
import { answerOf, answersUnread, type DeliveryRoute, type DeliveryRouter, type HandlerInvoker, type RequestOutcome } from './delivery.contracts.js';
import type { MessageParker, ParkDetails, ParkTarget, TierRouter } from './park-route.steps.js';
import { type InPlaceAttempts, type ObservedCall, RetriedInPlace } from './in-place.retry.js';
import { type OwnReturns, returnIdentity } from '../core/delivery/own-returns.ledger.js';
import { isRecalled, recallOf } from '../core/delivery/delivery.recall.js';

/** What the invoke step runs: the payload and its policy (a pattern's own, with a router), and the handler's own pattern. */
type Handling = Pick<Extract<DeliveryRoute, { kind: 'handle' }>, 'payload' | 'policy' | 'pattern'>;

/** A handler call that failed, as the failure step reads it; `counter`: the heartbeat's, `started` when the call began (performance.now()). */
type FailedCall = Pick<Handling, 'policy' | 'pattern'> &
  Pick<ObservedCall, 'observed' | 'counter' | 'started'> & { attempt: number; deaths: XDeath[] };

/** What a queue's delivery pipeline is made of; engine/delivery.chain.ts assembles it. */
export interface DeliveryPipelineParts {
  config: HandlerConfig;
  /** The handler call with its steps around it (the chain); for a routed queue, the call of each delivery's route. */
  invoke: HandlerInvoker;
  /** Chooses each delivery's route (the transport's patterns); its 'handle' routes are run by `invoke`. */
  router?: DeliveryRouter;
  parker: MessageParker;
  park: ParkTarget;
  tiers: TierRouter;
  logger: RetryLogger;
  observers?: ObserverHub;
  /** The deliveries this queue put back on purpose (paused, circuit open), which its quorum queue counts. */
  returns?: OwnReturns;
  /**
   * Hands a delivery over to a settlement without its handler (a park, a request, a tier after a failure before the
   * call): false when a stop took it back already. Absent when nothing waits before the handler.
   */
  handOver?: (message: ConsumeMessage, signal: AbortSignal) => boolean;
  /** Hears of a request answered without an error (the breaker counts it as a success); absent without a breaker. */
  answered?: (message: ConsumeMessage, attempt: number) => void;
  /** Where the chain tells of the attempts it retries in place (a partition's hold); absent when it retries none. */
  inPlace?: InPlaceAttempts;
  /** Whether the broker keeps a quorum queue's delivery counts through dead-lettering (keepsDeliveryCounts); quorum only. */
  keepsDeliveryCounts?: () => boolean;
}

/**
 * What a handler queue does with each delivery: 1. decide: one that cannot be read, or had every attempt, is parked
 * before any handler sees it; 2. route (the transport's patterns); 3. invoke the handler chain; 4. settle: ack, or a
 * retryable failure goes on to its tier, anything else is parked.
 */
export class DeliveryPipeline {
  // The parts every delivery reads are fields of their own; those of a failure, a park or a request are read from `parts`.
  private readonly config: HandlerConfig;
  private readonly invoke: HandlerInvoker;
  private readonly router?: DeliveryRouter;
  private readonly observers?: ObserverHub;
  private readonly returns?: OwnReturns;
  private readonly inPlace?: InPlaceAttempts;
  private readonly keepsDeliveryCounts?: () => boolean;
  /** The invoker hands the handler's answer on unread (answersUnread): an Observable is read here. */
  private readonly answersUnread: boolean;

  constructor(private readonly parts: DeliveryPipelineParts) {
    ({
      config: this.config,
      invoke: this.invoke,
      router: this.router,
      observers: this.observers,
      returns: this.returns,
      inPlace: this.inPlace,
      keepsDeliveryCounts: this.keepsDeliveryCounts,
    } = parts);
    this.answersUnread = answersUnread(parts.invoke);
  }

  /** Not async itself: the usual delivery (decoded, handled, acked) costs one promise reaction, not an async frame. */
  readonly handle = (message: ConsumeMessage, settle: Settle, signal: AbortSignal): Promise<void> => {
    const { queue, queueType, deserializer } = this.config;
    // Step 1, decide. With a router, the attempts allowed are known only once the body names the route.
    const returns = this.returns;
    let ownReturns: (() => number) | undefined;
    if (returns && !returns.isEmpty) {
      // The count stands while the message stays in the queue; it is forgotten once the message leaves it.
      const identity = returnIdentity(message, queue);
      const own = returns.claim(identity); // a hand-over's credit goes to this delivery, whatever becomes of it
      ownReturns = () => own;
      settle = forgettingReturns(settle, returns, identity);
    }
    const maxAttempts = this.router ? Infinity : this.config.maxAttempts;
    const keepsDeliveryCounts = this.keepsDeliveryCounts?.();
    const before = decideBeforeHandling({ message, queue, maxAttempts, queueType, deserializer, ownReturns, keepsDeliveryCounts });
    if (before.action === 'park') {
      const { reason, error, handlerCalls, deaths } = before;
      return this.parkStep(message, settle, { queue, deaths, reason, error, handlerCalls }, signal);
    }
    if (this.router) return this.routeStep(this.router, message, settle, signal, before.payload, before.attempt, before.deaths);
    const handling = { payload: before.payload, policy: this.config };
    return this.invokeStep(message, settle, signal, handling, before.attempt, before.deaths);
  };

  /** Step 2, route: a delivery of a queue whose messages differ in handler and policy goes where its route says. */
  private async routeStep(
    router: DeliveryRouter,
    message: ConsumeMessage,
    settle: Settle,
    signal: AbortSignal,
    payload: unknown,
    attempt: number,
    deaths: XDeath[],
  ): Promise<void> {
    const { queue } = this.config;
    const route = router(payload, message, deaths);
    if (route.kind === 'park') {
      if (!this.handedOver(message, signal)) return;
      await route.notify?.().catch((error: unknown) => this.parts.logger.error(`"${queue}": ${errorMessage(error)}`));
      return this.parkStep(message, settle, { queue, deaths, reason: route.reason, error: route.error, handlerCalls: 0 }, signal);
    }
    if (route.kind === 'once') {
      if (!this.handedOver(message, signal)) return;
      return this.requestStep(message, settle, signal, route, attempt, deaths);
    }
    const exhausted = exhaustedBeforeHandling(attempt, route.policy.maxAttempts);
    if (exhausted) return this.parkStep(message, settle, { queue, pattern: route.pattern, deaths, ...exhausted }, signal);
    return this.invokeStep(message, settle, signal, route, attempt, deaths);
  }

  /**
   * Step 3 for a request: runs it once, answered to its caller, and acks it whatever happens (the caller waits, so no
   * tier retries). Its handler call is observed as an event's is: handled, or failed (and not retried).
   */
  private async requestStep(
    message: ConsumeMessage,
    settle: Settle,
    signal: AbortSignal,
    route: Extract<DeliveryRoute, { kind: 'once' }>,
    attempt: number,
    deaths: XDeath[],
  ): Promise<void> {
    const { queue } = this.config;
    const context: RetryContext = { attempt, maxAttempts: 1, isLastAttempt: true, queue, message, deaths, signal };
    const hub = this.observers;
    const observed = hub?.deliveries
      ? new DeliveryObservation(hub, { queue, pattern: route.pattern, attempt, maxAttempts: 1, message, deaths, request: true })
      : undefined;
    const counter = hub?.counter;
    const started = counter ? performance.now() : 0;
    let outcome: RequestOutcome;
    try {
      outcome = await (observed?.scope ? observed.run(() => route.run(context)) : route.run(context));
    } catch (error) {
      this.parts.logger.error(`"${queue}": ${errorMessage(error)}`);
      outcome = { answered: false, error };
    }
    if (outcome.answered) {
      observed?.handled();
      if (counter) counter.countHandled(queue, performance.now() - started, message);
      this.parts.answered?.(message, attempt);
    } else {
      observed?.failed(outcome.error);
      if (counter) counter.countFailed(queue, performance.now() - started, outcome.error, false);
    }
    return settle.ack();
  }

  /** Step 3, invoke: calls the handler once, then settles (step 4). */
  private invokeStep(
    message: ConsumeMessage,
    settle: Settle,
    signal: AbortSignal,
    handling: Handling,
    attempt: number,
    deaths: XDeath[],
  ): Promise<void> {
    const { queue } = this.config;
    const { payload, policy, pattern } = handling;
    const invoke = this.invoke;
    const { maxAttempts } = policy;
    const context: RetryContext = { attempt, maxAttempts, isLastAttempt: isExhausted(attempt, maxAttempts), queue, message, deaths, signal };
    const hub = this.observers;
    let observed = hub?.deliveries ? new DeliveryObservation(hub, { queue, pattern, attempt, maxAttempts, message, deaths }) : undefined;
    let counter = hub?.counter; // the heartbeat's: two clock reads, no event
    let started = counter ? performance.now() : 0;
    // A partition's hold retries in place: each attempt is observed as its own (see InPlaceAttempts), the last one here.
    let tracked: ObservedCall | undefined;
    if (this.inPlace && (observed || counter)) this.inPlace.track(message, (tracked = { observed, counter, queue, started, told: false }));
    let running: Promise<unknown>;
    let unread = this.answersUnread;
    try {
      if (observed?.scope) {
        // An answer is read within the observers' scope too: a trace's span covers what an Observable answer does.
        const read = unread;
        running = observed.run(() => (read ? invoke(payload, context).then(answerOf) : invoke(payload, context)));
        unread = false;
      } else running = invoke(payload, context);
    } catch (error) {
      if (tracked) ({ observed, counter, started } = this.lastAttempt(message, tracked));
      return this.failedStep(message, settle, signal, { policy, pattern, attempt, deaths, observed, counter, started }, error);
    }
    // One reaction reads an unread answer (the usual one, undefined, is no Observable) and acts on the call's end.
    const handled = (answer?: unknown): Promise<void> | void => {
      if (unread && answer !== undefined) return settleAnswer(answer, () => handled(), failed);
      if (tracked) ({ observed, counter, started } = this.lastAttempt(message, tracked));
      observed?.handled();
      if (counter) counter.countHandled(queue, performance.now() - started, message);
      settle.ack();
    };
    const failed = (error: unknown): Promise<void> | undefined => {
      // Taken back before its handler was called (the queue stopped while it waited), or between two attempts in place
      // (handed over): already in the broker, or returned by the closing channel.
      if (tracked) ({ observed, counter, started } = this.lastAttempt(message, tracked));
      const recall = recallOf(signal);
      if ((isRecalled(recall) && error === recall.reason) || !this.handedOver(message, signal)) return;
      const inPlace = RetriedInPlace.from(error); // a partition's 'hold': the attempt it reached, and its last failure
      const call = { policy, pattern, attempt: inPlace?.attempt ?? attempt, deaths, observed, counter, started }; // on a failure only
      return this.failedStep(message, settle, signal, call, inPlace ? inPlace.failure : error);
    };
    // Promise.resolve: an invoker that answers a plain value (from JavaScript) still settles the message.
    return Promise.resolve(running).then(handled, failed);
  }

  /** The observation of a tracked call's last attempt (retried in place): none when its failure was told already. */
  private lastAttempt(message: ConsumeMessage, tracked: ObservedCall): Pick<ObservedCall, 'observed' | 'counter' | 'started'> {
    this.inPlace?.forget(message);
    return tracked.told ? { started: tracked.started } : tracked;
  }

  /** Step 4 after a failure: another attempt through the tiers, or the error queue. */
  private async failedStep(
    message: ConsumeMessage,
    settle: Settle,
    signal: AbortSignal,
    { policy, pattern, attempt, deaths, observed, counter, started }: FailedCall,
    error: unknown,
  ): Promise<void> {
    const { queue } = this.config;
    const { maxAttempts, delaysMs } = policy;
    const after = decideAfterFailure(attempt, maxAttempts, policy.isRetryable(error), delaysMs.length, error);
    observed?.failed(error, after.action === 'retry' ? after.tier : undefined, after.action === 'retry' ? delaysMs[after.tier - 1] : undefined);
    if (counter) counter.countFailed(queue, performance.now() - started, error, after.action === 'retry');
    if (after.action === 'park') {
      const handlerCalls = after.reason === 'malformed' ? attempt - 1 : attempt;
      const carried = observed?.carried(); // a tracer's context for a message that came without one
      return this.parkStep(message, settle, { queue, pattern, deaths, reason: after.reason, error, handlerCalls, carried }, signal);
    }
    const { tiers, logger } = this.parts;
    if (!(await tiers.ready(signal))) return; // the channel is gone: the broker redelivers the message
    const line = `"${queue}" attempt ${attempt}/${maxAttempts} failed: ${errorMessage(error)}; retrying in ${formatDuration(delaysMs[after.tier - 1])}`;
    if (this.config.retryLogs === 'line') logger.warn(line);
    else logger.debug(line);
    return tiers.route(message, settle, policy, attempt, signal);
  }

  /** The park step, wherever the decision to park was made. */
  private async parkStep(message: ConsumeMessage, settle: Settle, details: ParkDetails, signal: AbortSignal): Promise<void> {
    if (!this.handedOver(message, signal)) return;
    return this.parts.parker.park(message, settle, this.parts.park, details, signal);
  }

  /**
   * Whether the delivery is this pipeline's to settle: a stop may have taken it back while it waited (see handOver).
   * Without a hand-over nothing waits before the handler, so nothing is ever taken back.
   */
  private handedOver(message: ConsumeMessage, signal: AbortSignal): boolean {
    return this.parts.handOver?.(message, signal) ?? true;
  }
}

/**
 * Settles a call by its unread answer: an Observable (as Nest reads one) is read to its end first. An answer that
 * throws when looked at (a hostile Proxy) fails the call, as a throw from the handler would.
 */
function settleAnswer(answer: unknown, handled: () => void, failed: (error: unknown) => Promise<void> | undefined): Promise<void> | void {
  let observable: boolean;
  try {
    observable = isObservable(answer);
  } catch (error) {
    return failed(error);
  }
  return observable ? lastValueFrom(answer as Observable<unknown>).then(handled, failed) : handled();
}

/** `settle` that forgets the message's own returns once it leaves the queue (acked, or dead-lettered on to a tier). */
function forgettingReturns(settle: Settle, returns: OwnReturns, identity: string): Settle {
  return {
    ack: () => {
      returns.forget(identity);
      settle.ack();
    },
    nack: (requeue) => {
      if (!requeue) returns.forget(identity);
      settle.nack(requeue);
    },
  };
}
