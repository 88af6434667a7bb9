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
 * that the two never run at once.
 */
export async function retryInPlace(
  invoke: HandlerInvoker,
  payload: unknown,
  context: RetryContext,
  config: Pick<HandlerConfig, 'queue' | 'maxAttempts' | 'delaysMs' | 'isRetryable' | 'retryLogs'>,
  logger: RetryLogger,
): Promise<unknown> {
  const { queue, maxAttempts, delaysMs } = config;
  const recall = recallOf(context.signal);
  for (let attempt = context.attempt; ; attempt++) {
    try {
      return await invoke(payload, attempt === context.attempt ? context : { ...context, attempt, isLastAttempt: isExhausted(attempt, maxAttempts) });
    } catch (error) {
      const after = decideAfterFailure(attempt, maxAttempts, config.isRetryable(error), delaysMs.length, error);
      if (after.action === 'retry' && isRecalled(recall)) throw recall.reason;
      if (after.action !== 'retry' || context.signal.aborted) throw new RetriedInPlace(error, attempt);
      const delay = delaysMs[after.tier - 1];
      const line = `"${queue}" attempt ${attempt}/${maxAttempts} failed: ${errorMessage(error)}; retrying in place in ${formatDuration(delay)} (its key waits)`;
      if (config.retryLogs === 'line') logger.warn(line);
      else logger.debug(line);
      await Promise.all([sleep(delay, { signal: recall }), abandonedCallEnded(error, recall)]);
      if (isRecalled(recall)) throw recall.reason;
      if (context.signal.aborted) throw new RetriedInPlace(error, attempt);
    }
  }
}
