import { randomUUID } from 'node:crypto';
import type { ConsumeMessage, Options } from 'amqplib';
import { errorMessage, errorStack } from '../core/text/error-message.format.js';
import type { ParkReason } from '../core/delivery/delivery.decision.js';
import type { ParkLogs } from '../core/config/retry.options.js';
import { parkLogLine } from '../core/parking/park-log.line.js';
import { parkedPublishOptions, type ParkInput } from '../core/parking/parked-message.headers.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { PublishScope } from '../core/observe/retry.observer.js';
import type { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import type { Settle } from '../amqp/queue.consumer.js';
import { ParkedHeader } from '../core/headers/header.names.js';
import { isMissingTarget } from '../core/publish/publish.outcome.js';
import { reconnectDelay, type ReconnectPolicy } from '../core/connection/reconnect.policy.js';
import { sleep } from '../core/time/duration.timer.js';
import { firstFailureHeaders } from '../core/delivery/first-failure.headers.js';
import { republishProperties } from '../core/message/message.properties.js';
import { retryNames } from '../core/topology/retry-topology.plan.js';
import type { TopologyGuard } from '../amqp/topology.guard.js';
import type { RetryPolicy } from './delivery.contracts.js';

// The steps that end a delivery that did not succeed: the park (MessageParker), the route into the tier of the next
// attempt (TierRouter), and the confirmed copy both publish before they ack the original (publishCopyThenAck).

/** Spacing of the tries of a step whose delivery waits unsettled (a park, a move into a tier, a forward). */
export const REPUBLISH_RETRY: ReconnectPolicy = { initialDelayMs: 200, maxDelayMs: 30_000 };

/** A copy of a delivery to publish in its place, and how to name it and its target in log lines. */
export interface DeliveryCopy {
  exchange: string;
  routingKey: string;
  options: Options.Publish;
  what: { name: string; target: string };
}

/** What a confirmed copy needs besides the delivery: the publisher, the log, and how to declare a missing target. */
export interface CopyDeps {
  publisher: ConfirmPublisher;
  logger: RetryLogger;
  redeclare: () => Promise<unknown>;
}

/**
 * Publishes the copy until the broker confirms it, then acks the original (at least once, never lost). A failed
 * publish is tried again with backoff, never by requeueing (which would run the handler again); a missing target is
 * declared again first. False if the delivery's channel died first: the broker then redelivers the message.
 */
export async function publishCopyThenAck(
  deps: CopyDeps,
  message: ConsumeMessage,
  settle: Settle,
  copy: DeliveryCopy,
  signal: AbortSignal,
  onRejected?: (error: unknown) => void,
): Promise<boolean> {
  const { publisher, logger, redeclare } = deps;
  const { what } = copy;
  const patience = {
    signal,
    onSlowConfirm: (waitedMs: number) =>
      logger.warn(
        `${what.name} for ${what.target} waits ${waitedMs} ms for the broker's confirm (is it blocking publishers?); the delivery stays unacked`,
      ),
  };
  for (let attempt = 1; !signal.aborted; attempt++) {
    try {
      await publisher.publish(copy.exchange, copy.routingKey, message.content, copy.options, patience);
    } catch (publishError) {
      if (signal.aborted) break; // the delivery is gone (the broker delivers it again), or a stop gave up on it
      const delay = reconnectDelay(attempt, REPUBLISH_RETRY);
      const missing = isMissingTarget(publishError);
      onRejected?.(publishError);
      logger.error(
        `Could not publish ${what.name} to ${what.target} (${errorMessage(publishError)}); ` +
          `${missing ? 'declaring it again and ' : ''}trying again in ${delay} ms`,
      );
      if (missing) await redeclare().catch((error: unknown) => logger.error(`Could not declare ${what.target}: ${errorMessage(error)}`));
      await sleep(delay, { signal });
      continue;
    }
    settle.ack();
    return true;
  }
  return false;
}

/** What the parked copy says beyond the delivery itself. */
export type ParkDetails = Omit<ParkInput, 'properties' | 'now' | 'deliveredExchange' | 'deliveredRoutingKey'> &
  Partial<Pick<ParkInput, 'deliveredExchange' | 'deliveredRoutingKey'>> & {
    /** The microservices pattern the message was dispatched to, for observers; absent for decorator handlers. */
    pattern?: string;
    /** Headers the observers of the failed attempt give the copy (DeliveryScope.carry): a tracer's trace context. */
    carried?: Record<string, unknown>;
  };

/** Where a delivery is parked, and how to declare that queue again should an operator have deleted it. */
export interface ParkTarget {
  errorQueue: string;
  redeclare: () => Promise<unknown>;
}

/** Parks whose error the handler threw: the ones with a stack worth logging (option `logging.parked: 'stack'`). */
const HANDLER_FAILURES: ReadonlySet<ParkReason> = new Set(['exhausted', 'non-retryable']);

/** The park step: a copy with parking headers goes to the error queue, confirmed, and only then is the original acked. */
export class MessageParker {
  constructor(
    /** Also writes the plan records: one confirm channel for the library's own publishes. */
    readonly publisher: ConfirmPublisher,
    private readonly logger: RetryLogger,
    private readonly observers?: ObserverHub,
    /** 'stack': a park whose error the handler threw also logs its stack (always in the parked copy). */
    private readonly parkLogs: ParkLogs = 'line',
  ) {}

  async park(message: ConsumeMessage, settle: Settle, target: ParkTarget, details: ParkDetails, signal: AbortSignal): Promise<void> {
    const { errorQueue } = target;
    const { messageId } = message.properties;
    const what = { name: `a parked copy from "${details.queue}"`, target: `the error queue "${errorQueue}"` };
    const options = this.copyOptions(message, details);
    if (details.carried) options.headers = { ...options.headers, ...details.carried };
    const copy = { exchange: '', routingKey: errorQueue, options, what };
    const observers = this.observers?.active ? this.observers : undefined;
    let scope: PublishScope | undefined;
    let onRejected: ((error: unknown) => void) | undefined;
    if (observers) {
      const headers = (copy.options.headers ??= {});
      scope = observers.publishing({ kind: 'park', exchange: '', routingKey: errorQueue, headers, messageId });
      onRejected = (error) => {
        scope?.end?.(error);
        scope = undefined; // ended with the first failure; the tries after it are not spans of their own
        observers.emit('publishRejected', { kind: 'park', exchange: '', routingKey: errorQueue, error });
      };
    }
    const deps = { publisher: this.publisher, logger: this.logger, redeclare: target.redeclare };
    if (!(await publishCopyThenAck(deps, message, settle, copy, signal, onRejected))) return;
    scope?.end?.();
    const { queue, pattern, reason, error, handlerCalls } = details;
    observers?.emit('parked', { queue, pattern, errorQueue, reason, error, handlerCalls, message });
    const parkedId = copy.options.headers?.[ParkedHeader.id];
    const line = parkLogLine({ queue, errorQueue, reason, handlerCalls, messageId, parkedId, error: errorMessage(error) });
    this.logger.warn(this.parkLogs === 'stack' && HANDLER_FAILURES.has(reason) ? `${line}\n${errorStack(error)}` : line);
  }

  /** The parked copy's properties; should building them fail on a value no test foresaw, a copy that says so. */
  private copyOptions(message: ConsumeMessage, details: ParkDetails): Options.Publish {
    const id = randomUUID(); // one per park, so that every try of this park publishes the same copy
    try {
      const { carried: _carried, ...input } = details;
      return parkedPublishOptions({
        deliveredExchange: message.fields.exchange,
        deliveredRoutingKey: message.fields.routingKey,
        ...input,
        properties: message.properties,
        now: new Date(),
        id,
      });
    } catch (error) {
      this.logger.error(`Could not build the parking headers (${errorMessage(error)}); parking with the reason only`);
      return {
        persistent: true,
        headers: {
          [ParkedHeader.reason]: details.reason,
          [ParkedHeader.exceptionMessage]: errorMessage(details.error),
          [ParkedHeader.parkedAt]: new Date().toISOString(),
          [ParkedHeader.originalQueue]: details.queue,
          [ParkedHeader.id]: id,
        },
      };
    }
  }
}

/**
 * Sends a failed delivery on to the tier of its next attempt: `ready` waits until the retry topology exists (a nack
 * into a missing tier would drop the message), then `route` nacks it into the queue's own schedule, or publishes the
 * first failure of another schedule (a transport pattern with delays of its own) into that schedule's first tier. A
 * first failure with headers to carry (a tracer's context for a message that came without one) is published too: a
 * nack cannot add headers.
 */
export class TierRouter {
  constructor(
    private readonly queue: string,
    private readonly publisher: ConfirmPublisher,
    private readonly guard: TopologyGuard,
    private readonly redeclare: () => Promise<unknown>,
    private readonly logger: RetryLogger,
  ) {}

  /** Waits until the retry topology is known to exist, trying again with backoff; false if the delivery's channel died first. */
  async ready(signal: AbortSignal): Promise<boolean> {
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        await this.guard.ensure();
        return true;
      } catch (error) {
        const delay = reconnectDelay(attempt, REPUBLISH_RETRY);
        this.logger.error(`"${this.queue}": ${errorMessage(error)}; the failed message waits, trying again in ${delay} ms`);
        await sleep(delay, { signal });
      }
    }
    return false;
  }

  /**
   * Sends the delivery that failed `attempt` into the tier of the next one. A first failure of another schedule is
   * published as a copy into its first tier through the dead-letter exchange (same body and properties but
   * `expiration` and `userId`, headers that say where it failed first), the original acked once the copy is confirmed.
   */
  async route(message: ConsumeMessage, settle: Settle, policy: RetryPolicy, attempt: number, signal: AbortSignal): Promise<void> {
    const tier = policy.firstTier;
    if (tier === undefined || attempt !== 1) return settle.nack(false);
    const { queue } = this;
    const { headers: given, expiration } = message.properties;
    const headers = firstFailureHeaders(given as Record<string, unknown> | undefined, queue, message.fields, expiration);
    // As dead-lettering would: no per-message TTL (it would cut the tier's delay short), and no userId (the broker
    // refuses a publish whose user_id is not this connection's user, and the move would be tried again forever).
    const copy = {
      exchange: retryNames(queue).deadLetterExchange,
      routingKey: tier,
      options: republishProperties(message.properties, headers),
      what: { name: `a failed message from "${queue}"`, target: `the retry tier "${tier}"` },
    };
    await publishCopyThenAck({ publisher: this.publisher, logger: this.logger, redeclare: this.redeclare }, message, settle, copy, signal);
  }
}
