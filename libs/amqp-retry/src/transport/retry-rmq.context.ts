import { RmqContext } from '@nestjs/microservices';
import type { ConsumeMessage } from 'amqplib';
import type { RetryContext } from '../core/delivery/retry.context.js';

/**
 * What `getChannelRef()` gives: the transport settles every message itself, and a second ack from a handler written for
 * manual acks would make the broker close the channel (406 PRECONDITION_FAILED). These calls do nothing but say so once.
 */
export interface RetryChannelRef {
  /** Does nothing (the transport acks): logs once that it was called. */
  ack(message?: unknown): void;
  /** Does nothing (the transport retries or parks): logs once that it was called. */
  nack(message?: unknown): void;
  /** Does nothing (the transport retries or parks): logs once that it was called. */
  reject(message?: unknown): void;
}

/**
 * The `@Ctx()` of a transport handler: Nest's RmqContext (`getMessage()`, `getPattern()`, `getChannelRef()`), the
 * attempt's RetryContext (`getRetryContext()`: attempt, maxAttempts, isLastAttempt, death history, abort signal) and
 * the metadata a Nest client's dispatch hook attached (`getMetadata()`).
 */
export class RetryRmqContext extends RmqContext {
  /** @internal Set by RetryServer on a request handler's context: its error is answered to a caller, not retried. */
  answersCaller = false;

  constructor(
    message: ConsumeMessage,
    pattern: string,
    private readonly retry: RetryContext,
    channelRef: RetryChannelRef,
    private readonly metadata?: Readonly<Record<string, unknown>>,
  ) {
    super([message, channelRef, pattern]);
  }

  /** What the client's `ClientProxy.setOnDispatchHook` attached to the packet (`packet.metadata`), if anything. */
  getMetadata(): Readonly<Record<string, unknown>> | undefined {
    return this.metadata;
  }

  override getMessage(): ConsumeMessage {
    return super.getMessage() as ConsumeMessage;
  }

  override getChannelRef(): RetryChannelRef {
    return super.getChannelRef() as RetryChannelRef;
  }

  /** The attempt's RetryContext: attempt, maxAttempts, isLastAttempt, death history, abort signal. */
  getRetryContext(): RetryContext {
    return this.retry;
  }
}
