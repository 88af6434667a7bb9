import type { Middleware, PolicyOf } from './delivery.contracts.js';
import { decideAfterFailure } from '../core/delivery/delivery.decision.js';
import { formatDuration } from '../core/time/duration.reader.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import type { OrderingConfig } from '../core/ordering/ordering.config.js';
import { type KeyTurn, KeySequencer } from '../core/ordering/key.sequencer.js';
import { waitAside } from '../core/delivery/delivery.gate.js';
import { readMessageKey } from '../core/message/message-key.reader.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { retryIdentity, retryOwner } from '../core/delivery/retry.identity.js';
import { MalformedMessageError } from '../errors/malformed-message.error.js';
import { type InPlaceAttempts, RetriedInPlace, retryInPlace } from './in-place.retry.js';
import { abandonedCallEnded } from './time-limit.step.js';
import { isTimeout } from '../errors/handler-timeout.error.js';

/**
 * The ordering step: messages with the same ordering key run one at a time, in arrival order. A key function that
 * throws or returns something other than a string parks the message as malformed; undefined runs it unsequenced.
 * `prefetch`: the consumer's prefetch in force (a half-open circuit's is smaller), which bounds what waits behind holds;
 * `attempts`: observes each attempt retried in place (see retryInPlace).
 */
export const orderingStep =
  (
    config: HandlerConfig & { ordering: OrderingConfig },
    logger: RetryLogger,
    policyOf: PolicyOf,
    prefetch: () => number = () => config.prefetch,
    attempts?: InPlaceAttempts,
  ): Middleware =>
  (invoke) => {
    const { ordering, queue } = config;
    const sequencer = new KeySequencer(
      () => Math.max(0, prefetch() - 1),
      ({ key, waiting, why }) =>
        logger.warn(
          `"${queue}": ordering key "${key}" stops waiting for its retried message (${why === 'full' ? `the messages held behind retries would fill the prefetch of ${prefetch()}` : 'it did not come back in time'}); ${waiting} later message(s) of the key run now, before it`,
        ),
    );
    // Per key, a call past its time limit that may still run (see the finally below): settles when it has ended, one
    // more timeout at most, and is forgotten then.
    const abandoned = new Map<string, Promise<void>>();
    /** `entering`'s turn once the key's abandoned call has ended; undefined, the turn given back, if `signal` aborts first. */
    const afterAbandoned = async (key: string, entering: KeyTurn | Promise<KeyTurn | undefined>, signal: AbortSignal) => {
      const turn = await entering;
      const running = abandoned.get(key);
      if (turn === undefined || running === undefined || (await endedUnlessAborted(running, signal))) return turn;
      turn.leave();
      return undefined;
    };
    return async (payload, context) => {
      const read = readMessageKey(ordering.key, payload, context.message, 'ordering key');
      if (!read.ok) throw new MalformedMessageError(read.problem);
      if (read.key === undefined) return invoke(payload, context);
      // A hold names the retried copy it waits for (see retryOwner): this delivery's identity at the next attempt.
      const identity = retryIdentity(context.message, context.deaths, queue);
      const owner = retryOwner(identity, context.attempt);
      // Waiting for the key (its turn, then its abandoned call) runs nothing: aside from the consumer's gate, so that a
      // suspect of a crash is not kept waiting behind a hold, and every delivery after it with it (see mayRun).
      let turn = sequencer.tryEnter(read.key, owner);
      if (turn === undefined || abandoned.has(read.key)) {
        const entering = turn ?? sequencer.enter(read.key, owner, context.signal);
        turn = await waitAside(context.message, afterAbandoned(read.key, entering, context.signal));
        // The delivery's channel died while it waited (for its key, or for the gate after it): it cannot be settled,
        // and the broker redelivers it; the key moves on.
        if (turn !== undefined && context.signal.aborted) turn = void turn.leave();
      }
      if (turn === undefined) throw new Error(`"${queue}": the delivery was lost while it waited for its ordering key`);
      let hold: { owner: string; ms: number } | undefined;
      let failure: unknown;
      const { maxAttempts, delaysMs, isRetryable } = policyOf(context);
      try {
        // A partition's hold retries in place, within the key's turn (see retryInPlace).
        if (config.retryInPlace)
          return await retryInPlace(invoke, payload, context, { ...config, maxAttempts, delaysMs, isRetryable }, logger, attempts);
        return await invoke(payload, context);
      } catch (error) {
        failure = error;
        // A delivery whose signal aborted (taken back by a stop, or its channel lost) goes back to the broker at this
        // attempt, not on to a tier: no later copy would end a hold.
        if (ordering.whileRetrying === 'hold' && !config.retryInPlace && !context.signal.aborted) {
          const after = decideAfterFailure(context.attempt, maxAttempts, isRetryable(error), delaysMs.length, error);
          if (after.action === 'retry') {
            hold = { owner: retryOwner(identity, context.attempt + 1), ms: delaysMs[after.tier - 1] + ordering.holdGraceMs };
            logger.debug(
              `"${queue}": ordering key "${read.key}" holds its later messages until the retry settles (at most ${formatDuration(hold.ms)})`,
            );
          }
        }
        throw error;
      } finally {
        // A call past its time limit may run on: whoever takes the key's turn next (its next message, or under a hold
        // the retry, which must find its hold set at once) waits for it to end, one more timeout at most.
        const timedOut = RetriedInPlace.from(failure)?.failure ?? failure;
        if (isTimeout(timedOut)) {
          const key = read.key;
          const ended: Promise<void> = abandonedCallEnded(timedOut).then(() => {
            if (abandoned.get(key) === ended) abandoned.delete(key);
          });
          abandoned.set(key, ended);
        }
        turn.leave(hold);
      }
    };
  };

/** Resolves with true once `ended` settles, or with undefined once `signal` aborts before it. */
function endedUnlessAborted(ended: Promise<void>, signal: AbortSignal): Promise<true | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const stop = () => resolve(undefined);
    signal.addEventListener('abort', stop, { once: true });
    void ended.then(() => {
      signal.removeEventListener('abort', stop);
      resolve(true);
    });
  });
}
