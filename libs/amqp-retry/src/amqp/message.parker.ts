import { randomUUID } from 'node:crypto';
import type { ConsumeMessage, Options } from 'amqplib';
import { sleep } from '../core/duration.timer.js';
import { errorMessage, errorStack } from '../core/error-message.js';
import type { ParkReason } from '../core/delivery.decision.js';
import type { FailureLogs } from '../core/retry-options.js';
import { republishProperties } from '../core/message-properties.js';
import { parkedPublishOptions, type ParkInput } from '../core/parked-message.js';
import { reconnectDelay, type ReconnectPolicy } from '../core/reconnect.policy.js';
import type { RetryLogger } from '../core/retry-logger.js';
import { PublishError } from '../errors/publish.error.js';
import type { ObserverHub } from '../observability/observer-hub.js';
import type { PublishScope } from '../observability/retry-observer.js';
import type { ConfirmPublisher } from './confirm.publisher.js';
import type { Settle } from './queue.consumer.js';

/** What the parked copy says beyond the delivery itself. */
export type ParkDetails = Omit<ParkInput, 'properties' | 'now' | 'deliveredExchange' | 'deliveredRoutingKey'> &
  Partial<Pick<ParkInput, 'deliveredExchange' | 'deliveredRoutingKey'>> & {
    /** The microservices pattern the message was dispatched to, for observers; absent for decorator handlers. */
    pattern?: string;
  };

/** Where a delivery is parked, and how to declare that queue again should an operator have deleted it. */
export interface ParkTarget {
  errorQueue: string;
  redeclare: () => Promise<unknown>;
}

/** Parks whose error the handler threw: their stack is worth a log. */
const HANDLER_FAILURES: ReadonlySet<ParkReason> = new Set(['exhausted', 'non-retryable']);

/** Spacing of the attempts to park a message whose park failed: soon at first, then at most every 30 s. */
export const PARK_RETRY: ReconnectPolicy = { initialDelayMs: 200, maxDelayMs: 30_000 };

/** Waits `ms`, or less if `signal` aborts first. */
export const pause = (ms: number, signal: AbortSignal): Promise<void> => sleep(ms, { signal });

/** True when a publish failed because its target queue or exchange is missing (returned, or a 404). */
export const isMissingTarget = (error: unknown): boolean =>
  error instanceof PublishError && (error.brokerCode === 404 || /returned as unroutable/.test(error.message));

/**
 * Parks a delivery at least once: the copy (body and properties kept, parking headers added) is published to the
 * error queue and confirmed, and only then is the original acked.
 *
 * A park that fails is tried again, with backoff, while the delivery stays unsettled: never by requeueing it, which
 * would run the handler again. A missing error queue is declared again first. The tries end only when the delivery's
 * channel is gone (`signal`), and then the broker redelivers the message.
 */
export class MessageParker {
  constructor(
    /** Also writes the plan records: one confirm channel for the library's own publishes. */
    readonly publisher: ConfirmPublisher,
    private readonly logger: RetryLogger,
    private readonly observers?: ObserverHub,
    /** 'line': a park is an error with the handler's stack (Nest's ExceptionsHandler printed none); 'nest': a warning. */
    private readonly failureLogs: FailureLogs = 'nest',
  ) {}

  async park(message: ConsumeMessage, settle: Settle, target: ParkTarget, details: ParkDetails, signal: AbortSignal): Promise<void> {
    const { errorQueue } = target;
    const copy = { exchange: '', routingKey: errorQueue, options: this.copyOptions(message, details) };
    const what = { name: `a parked copy from "${details.queue}"`, target: `the error queue "${errorQueue}"` };
    const observers = this.observers?.active ? this.observers : undefined;
    let scope: PublishScope | undefined;
    let onRejected: ((error: unknown) => void) | undefined;
    if (observers) {
      const headers = (copy.options.headers ??= {});
      const { messageId } = message.properties;
      scope = observers.publishing({ kind: 'park', exchange: '', routingKey: errorQueue, headers, messageId });
      onRejected = (error) => {
        scope?.end?.(error);
        scope = undefined; // ended with the first failure; the tries after it are not spans of their own
        observers.emit('publishRejected', { kind: 'park', exchange: '', routingKey: errorQueue, error });
      };
    }
    if (!(await this.publishThenAck(message, settle, copy, what, target.redeclare, signal, onRejected))) return;
    scope?.end?.();
    const { queue, pattern, reason, error, handlerCalls } = details;
    observers?.emit('parked', { queue, pattern, errorQueue, reason, error, handlerCalls, message });
    const line = `Parked a message from "${queue}" in "${errorQueue}" (${reason} after ${handlerCalls} attempt${handlerCalls === 1 ? '' : 's'}): ${errorMessage(error)}`;
    if (this.failureLogs === 'nest') this.logger.warn(line);
    else this.logger.error(HANDLER_FAILURES.has(reason) ? `${line}\n${errorStack(error)}` : line);
  }

  /**
   * Moves a delivery into a retry tier by publishing a copy (same body and properties but `expiration` and `userId`,
   * `headers` instead of its own) and acking the original once the copy is confirmed: the first failure of a schedule
   * that a nack cannot reach (see core/first-failure.ts). Tried again like a park while the delivery stays unsettled.
   */
  async move(
    message: ConsumeMessage,
    settle: Settle,
    to: { exchange: string; routingKey: string; headers: Record<string, unknown>; queue: string },
    redeclare: () => Promise<unknown>,
    signal: AbortSignal,
  ): Promise<boolean> {
    // As dead-lettering would: no per-message TTL (it would cut the tier's delay short), and no userId (the broker
    // refuses a publish whose user_id is not this connection's user, and the move would be tried again forever).
    const options = republishProperties(message.properties, to.headers);
    const what = { name: `a failed message from "${to.queue}"`, target: `the retry tier "${to.routingKey}"` };
    return this.publishThenAck(message, settle, { ...to, options }, what, redeclare, signal);
  }

  /** Publishes the copy until it is confirmed, then acks the original; false if the delivery's channel died first. */
  private async publishThenAck(
    message: ConsumeMessage,
    settle: Settle,
    copy: { exchange: string; routingKey: string; options: Options.Publish },
    what: { name: string; target: string },
    redeclare: () => Promise<unknown>,
    signal: AbortSignal,
    onRejected?: (error: unknown) => void,
  ): Promise<boolean> {
    const patience = {
      signal,
      onSlowConfirm: (waitedMs: number) =>
        this.logger.warn(
          `${what.name} for ${what.target} waits ${waitedMs} ms for the broker's confirm (is it blocking publishers?); the delivery stays unacked`,
        ),
    };
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        await this.publisher.publish(copy.exchange, copy.routingKey, message.content, copy.options, patience);
      } catch (publishError) {
        const delay = reconnectDelay(attempt, PARK_RETRY);
        const missing = isMissingTarget(publishError);
        onRejected?.(publishError);
        this.logger.error(
          `Could not publish ${what.name} to ${what.target} (${errorMessage(publishError)}); ` +
            `${missing ? 'declaring it again and ' : ''}trying again in ${delay} ms`,
        );
        if (missing) await redeclare().catch((error: unknown) => this.logger.error(`Could not declare ${what.target}: ${errorMessage(error)}`));
        await pause(delay, signal);
        continue;
      }
      settle.ack();
      return true;
    }
    return false;
  }

  /** The parked copy's properties; should building them fail on a value no test foresaw, a copy that says so. */
  private copyOptions(message: ConsumeMessage, details: ParkDetails): Options.Publish {
    const id = randomUUID(); // one per park, so that every try of this park publishes the same copy
    try {
      return parkedPublishOptions({
        deliveredExchange: message.fields.exchange,
        deliveredRoutingKey: message.fields.routingKey,
        ...details,
        properties: message.properties,
        now: new Date(),
        id,
      });
    } catch (error) {
      this.logger.error(`Could not build the parking headers (${errorMessage(error)}); parking with the reason only`);
      return {
        persistent: true,
        headers: {
          'x-parked-reason': details.reason,
          'x-exception-message': errorMessage(details.error),
          'x-parked-at': new Date().toISOString(),
          'x-original-queue': details.queue,
          'x-parked-id': id,
        },
      };
    }
  }
}
