import { randomUUID } from 'node:crypto';
import type { Middleware } from './delivery.contracts.js';
import { sleep, startInterval, startTimer, withinTime } from '../core/time/duration.timer.js';
import { errorMessage } from '../core/text/error-message.format.js';
import type { IdempotencyConfig } from '../core/idempotency/idempotency.config.js';
import type { ClaimResult, IdempotencyStore } from '../core/idempotency/idempotency.store.js';
import { requireMessageKey } from '../core/message/message-key.reader.js';
import { reconnectDelay, type ReconnectPolicy } from '../core/connection/reconnect.policy.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { IdempotencyStoreError } from '../errors/idempotency-store.error.js';
import { isTimeout } from '../errors/handler-timeout.error.js';

/** A store call that takes longer than this counts as the store being down. */
const STORE_TIMEOUT_MS = 5_000;
/** Spacing of the checks of a key another copy has claimed. */
const BUSY_POLL: ReconnectPolicy = { initialDelayMs: 25, maxDelayMs: 1_000 };

/** The store's key of a message: the queue (encoded, so that no ':' in it can blur the border) and the message's key. */
export const storeKeyOf = (queue: string, key: string) => `${encodeURIComponent(queue)}:${key}`;

async function bounded<T>(operation: string, key: string, call: () => Promise<T>): Promise<T> {
  try {
    return await withinTime(call(), STORE_TIMEOUT_MS, () => new Error(`no answer within ${STORE_TIMEOUT_MS} ms`));
  } catch (error) {
    throw new IdempotencyStoreError(operation, key, error);
  }
}

/**
 * Wraps a handler so that each message runs once (docs/idempotency-and-ordering.md): claim the key ('handled': the
 * copy is acked uncalled; 'busy': check again with backoff); run the handler, renewing the claim; on failure release
 * the claim and rethrow, on success record the key as handled before returning, so the ack comes after the record.
 */
export const idempotencyStep =
  (queue: string, config: IdempotencyConfig, logger: RetryLogger): Middleware =>
  (invoke) => {
    const { store, claimTtlMs, ttlMs } = config;
    return async (payload, context) => {
      const messageKey = requireMessageKey(
        config.key,
        payload,
        context.message,
        'idempotency key',
        config.keyIsMessageId
          ? 'the message has no message id, which idempotency needs to recognise its copies: publish with a messageId (RetryPublisher sets one), or give idempotency.key'
          : 'the idempotency key function returned undefined',
      );
      const key = storeKeyOf(queue, messageKey);
      const token = randomUUID();
      if ((await claim(store, key, token, claimTtlMs, context.signal)) === 'handled') {
        logger.debug(`"${queue}": "${messageKey}" was handled already; acking this copy without calling the handler`);
        return undefined;
      }
      const renewal = renewEvery(store, key, token, claimTtlMs, (problem) =>
        logger.warn(`"${queue}": could not renew the claim of "${messageKey}" (${problem}); another copy may run once it expires`),
      );
      let result: unknown;
      try {
        result = await invoke(payload, context);
      } catch (error) {
        const release = () => {
          renewal.cancel();
          return bounded('release', key, () => store.release(key, token)).catch((releaseError: unknown) =>
            logger.warn(`"${queue}": ${errorMessage(releaseError)}; the retry waits until the claim expires (${claimTtlMs} ms)`),
          );
        };
        if (!isTimeout(error)) {
          await release();
          throw error;
        }
        // A call past its time limit may run on: its claim is renewed until it ends (one more timeout at most, as the
        // key's next message waits) and released then, so that no retry runs beside it; past that bound it lapses.
        const bound = startTimer(error.timeoutMs, () => renewal.cancel());
        bound.unref();
        void error.callEnded.then(() => {
          bound.cancel();
          return release();
        });
        throw error;
      }
      renewal.cancel();
      await record(store, key, ttlMs, claimTtlMs, (error) =>
        logger.error(
          `"${queue}": handled "${messageKey}" but could not record it (${errorMessage(error)}); acking it anyway, so a copy delivered later runs again`,
        ),
      );
      return result;
    };
  };

/** Claims the key, waiting while another copy holds it. */
async function claim(store: IdempotencyStore, key: string, token: string, claimTtlMs: number, signal: AbortSignal): Promise<'claimed' | 'handled'> {
  for (let attempt = 1; ; attempt++) {
    const result: ClaimResult = await bounded('claim', key, () => store.claim(key, token, claimTtlMs));
    if (result !== 'busy') return result;
    await sleep(reconnectDelay(attempt, BUSY_POLL), { signal });
    if (signal.aborted) throw new Error(`the delivery was lost while another copy held "${key}"`);
  }
}

/** Renews the claim while the handler runs, until the timer it returns is cancelled. */
function renewEvery(store: IdempotencyStore, key: string, token: string, claimTtlMs: number, warn: (problem: string) => void) {
  let lost = false;
  // Every third of claimTtl, which may be longer than a single Node timer takes (a claim of up to a year).
  return startInterval(Math.floor(claimTtlMs / 3), () => {
    bounded('renew', key, () => store.renew(key, token, claimTtlMs)).then(
      (held) => {
        if (!held && !lost) {
          lost = true;
          warn('it expired and another copy claimed it');
        }
      },
      (error: unknown) => warn(errorMessage(error)),
    );
  }).unref();
}

/**
 * Records the key as handled, trying again with backoff for up to claimTtl (while the claim keeps other copies away);
 * then gives up, and the message is acked all the same: its work is done. Never throws. It goes on when the delivery's
 * channel died: its redelivered copy waits on the claim and is acked once it finds the record (stopping here would let
 * the claim expire and the copy run the handler again).
 */
async function record(store: IdempotencyStore, key: string, ttlMs: number, claimTtlMs: number, giveUp: (error: unknown) => void) {
  const deadline = Date.now() + claimTtlMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await bounded('record', key, () => store.markHandled(key, ttlMs));
    } catch (error) {
      const wait = reconnectDelay(attempt, { initialDelayMs: 100, maxDelayMs: 2_000 });
      if (Date.now() + wait >= deadline) return giveUp(error);
      await sleep(wait);
    }
  }
}
