import type { HandlerInvoker } from './delivery.contracts.js';
import { decideAfterFailure, isExhausted } from '../core/delivery/delivery.decision.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { formatDuration } from '../core/time/duration.reader.js';
import { sleep } from '../core/time/duration.timer.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { isRecalled, recallOf } from '../core/delivery/delivery.recall.js';
import { abandonedCallEnded } from './time-limit.step.js';
import { performance } from 'node:perf_hooks';
import type { ConsumeMessage } from 'amqplib';
import type { DeliveryObservation } from '../core/observe/delivery.observation.js';
import type { DeliveryCounter } from '../core/observe/observer.hub.js';

/** A delivery's handler call as the pipeline observes it: its current attempt's observation and start. */
export interface ObservedCall {
  observed?: DeliveryObservation;
  counter?: DeliveryCounter;
  queue: string;
  /** When the current attempt began (performance.now()), for the counter. */
  started: number;
  /** The current attempt's failure was told already (it is retried in place): the call's end tells nothing of it. */
  told: boolean;
}

/**
 * Observes each attempt of a message retried in place as an attempt through a tier is observed: its failure (failed
 * and retried, to the tier whose delay it waits), then the next attempt's own observation (a consumer span of its own,
 * with its attempt number), current while that attempt runs. The pipeline tracks a delivery only when something
 * observes it; an untracked one is retried as it is.
 */
export class InPlaceAttempts {
  private readonly calls = new WeakMap<ConsumeMessage, ObservedCall>();

  /** Observes `message`'s attempts in place through `call`, until forget(). */
  track(message: ConsumeMessage, call: ObservedCall): void {
    this.calls.set(message, call);
  }

  forget(message: ConsumeMessage): void {
    this.calls.delete(message);
  }

  /** The current attempt failed and runs again in place after `delayMs` (its tier `tier`). */
  retrying(message: ConsumeMessage, error: unknown, tier: number, delayMs: number): void {
    const call = this.calls.get(message);
    if (call === undefined || call.told) return;
    call.told = true;
    call.observed?.failed(error, tier, delayMs);
    if (call.counter) call.counter.countFailed(call.queue, performance.now() - call.started, error, true);
  }

  /** Runs the call of attempt `attempt` as that attempt: observed from now, in its observers' scope. */
  run<T>(message: ConsumeMessage, attempt: number, call: () => T): T {
    const observing = this.calls.get(message);
    if (observing === undefined) return call();
    observing.told = false;
    observing.observed = observing.observed?.next(attempt);
    if (observing.counter) observing.started = performance.now();
    const observed = observing.observed;
    return observed?.scope ? observed.run(call) : call();
  }
}

/** The last failure of a message retried in place, with the attempt it was: the pipeline parks it. */
export class RetriedInPlace extends Error {
  constructor(
    readonly failure: unknown,
    readonly attempt: number,
  ) {
    super(errorMessage(failure));
    this.name = 'RetriedInPlace';
  }

  /** `error` as a RetriedInPlace, or undefined; never throws (a thrown Proxy may throw from its prototype trap). */
  static from(error: unknown): RetriedInPlace | undefined {
    try {
      return error instanceof RetriedInPlace ? error : undefined;
    } catch {
      return undefined;
    }
  }
}

/**
 * Retries in place (partitions with `whileRetrying: 'hold'`): the message stays unacked at its place in the queue and
 * runs again after its tier's delay, while its key's later messages wait. Nothing comes back through the queue, so a
 * deep queue cannot starve the hold, and a crash or hand-over requeues it ahead of its key's later ones: a hand-over
 * (its recall, recallOf) cuts the wait short and throws the DeliveryRecalled, which leaves the message unsettled for
 * the closing channel to return. Attempts are counted in memory: after a crash they start again from the broker's
 * count. After a timeout, the next attempt also waits for the abandoned call to end (one more timeout at most), so
 * that the two never run at once. `attempts` observes each attempt as one (see InPlaceAttempts).
 */
export async function retryInPlace(
  invoke: HandlerInvoker,
  payload: unknown,
  context: RetryContext,
  config: Pick<HandlerConfig, 'queue' | 'maxAttempts' | 'delaysMs' | 'isRetryable' | 'retryLogs'>,
  logger: RetryLogger,
  attempts?: InPlaceAttempts,
): Promise<unknown> {
  const { queue, maxAttempts, delaysMs } = config;
  const recall = recallOf(context.signal);
  for (let attempt = context.attempt; ; attempt++) {
    try {
      if (attempt === context.attempt) return await invoke(payload, context);
      const next = { ...context, attempt, isLastAttempt: isExhausted(attempt, maxAttempts) };
      return await (attempts ? attempts.run(context.message, attempt, () => invoke(payload, next)) : invoke(payload, next));
    } catch (error) {
      const after = decideAfterFailure(attempt, maxAttempts, config.isRetryable(error), delaysMs.length, error);
      if (after.action === 'retry' && isRecalled(recall)) throw recall.reason;
      if (after.action !== 'retry' || context.signal.aborted) throw new RetriedInPlace(error, attempt);
      const delay = delaysMs[after.tier - 1];
      attempts?.retrying(context.message, error, after.tier, delay);
      const line = `"${queue}" attempt ${attempt}/${maxAttempts} failed: ${errorMessage(error)}; retrying in place in ${formatDuration(delay)} (its key waits)`;
      if (config.retryLogs === 'line') logger.warn(line);
      else logger.debug(line);
      await Promise.all([sleep(delay, { signal: recall }), abandonedCallEnded(error, recall)]);
      if (isRecalled(recall)) throw recall.reason;
      if (context.signal.aborted) throw new RetriedInPlace(error, attempt);
    }
  }
}
