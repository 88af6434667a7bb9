import type { ConsumeMessage } from 'amqplib';
import type { ParkReason } from '../core/delivery/delivery.decision.js';
import type { DeliveryEvent, DeliveryFailedEvent, MessageParkedEvent, RetryObserver } from '../core/observe/retry.observer.js';
import { errorMessage } from '../core/text/error-message.format.js';

/**
 * What became of one delivery to a handler: `interrupted` when its channel closed (a lost connection) before the
 * handler answered, the message going back to its queue for a redelivery.
 */
export type AttemptOutcome = 'handled' | 'retried' | 'parked' | 'failed' | 'running' | 'interrupted';

/** One delivery of a message to its handler (or, for a message parked unread, the delivery that parked it). */
export interface HarnessAttempt {
  /** The message's `messageId` property. */
  messageId?: string;
  /** The handler's queue. */
  queue: string;
  /** The transport pattern, for a transport handler. */
  pattern?: string;
  /** 1 for the first delivery, as the handler's `RetryContext.attempt`; 0 when it was parked before its handler ran. */
  attempt: number;
  /** When it started, in virtual milliseconds since the harness started. */
  at: number;
  /** The retry tier it waited in before this attempt (1 for the first tier); undefined for the first attempt. */
  tier?: number;
  /** What came of it (`running` while the handler runs, `interrupted` when its channel closed first). */
  outcome: AttemptOutcome;
  /** The error's message, when the handler failed or the message was parked. */
  error?: string;
  /** The error itself, as thrown. */
  thrown?: unknown;
  /** Where it goes next when `retried`: the tier's number and delay. */
  retryTier?: number;
  /** How long it waits in that tier. */
  retryDelayMs?: number;
  /** Why it was parked, when `parked`. */
  parkReason?: ParkReason;
  /** The headers of the delivery as the broker wrote them (`x-death`, `x-first-death-*`, ...). */
  headers: Record<string, unknown>;
  /** Whether the broker marked the delivery redelivered (given back after a nack or a lost channel). */
  redelivered: boolean;
}

/** A message a handler took successfully. */
export interface HarnessHandled {
  /** The handler's queue. */
  queue: string;
  /** The transport pattern, for a transport handler. */
  pattern?: string;
  /** The message's `messageId` property. */
  messageId?: string;
  /** The attempt that succeeded (1: the first). */
  attempt: number;
  /** When, in virtual milliseconds since the harness started. */
  at: number;
  /** The body, parsed as JSON when it is JSON, else the text. */
  body: unknown;
  /** The delivery as the handler got it. */
  message: ConsumeMessage;
}

/** Reads a body as JSON when it is JSON, else as text. */
export function readBody(content: Buffer): unknown {
  const text = content.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The key a message's attempts are kept under: its message id, else its correlation id, else its body. */
export const messageKey = (message: ConsumeMessage): string =>
  String(message.properties.messageId ?? message.properties.correlationId ?? `body:${message.content.toString('utf8')}`);

/** Records what the library's observers are told, per message, for the harness to answer with. */
export class HarnessRecorder implements RetryObserver {
  readonly attemptsByMessage = new Map<string, HarnessAttempt[]>();
  /** Every attempt, in the order they started. */
  readonly allAttempts: HarnessAttempt[] = [];
  readonly handledMessages: HarnessHandled[] = [];
  /** The error queue each handler queue parks in, as the parked events name them. */
  readonly errorQueues = new Map<string, string>();
  private readonly open = new Map<ConsumeMessage, HarnessAttempt>();

  constructor(private readonly elapsed: () => number) {}

  deliveryStarted(event: DeliveryEvent): void {
    this.open.set(event.message, this.record(event, event.attempt, 'running'));
  }

  handled(event: DeliveryEvent): void {
    const attempt = this.take(event.message);
    if (attempt) attempt.outcome = 'handled';
    this.handledMessages.push({
      queue: event.queue,
      ...(event.pattern !== undefined ? { pattern: event.pattern } : {}),
      messageId: event.message.properties.messageId as string | undefined,
      attempt: event.attempt,
      at: this.elapsed(),
      body: readBody(event.message.content),
      message: event.message,
    });
  }

  failed(event: DeliveryFailedEvent): void {
    const attempt = this.take(event.message);
    if (!attempt) return;
    attempt.outcome = event.retryTier !== undefined ? 'retried' : 'failed';
    attempt.error = errorMessage(event.error);
    attempt.thrown = event.error;
    if (event.retryTier !== undefined) attempt.retryTier = event.retryTier;
    if (event.retryDelayMs !== undefined) attempt.retryDelayMs = event.retryDelayMs;
  }

  /** The channel of a delivery closed before it was acknowledged: its attempt ends, interrupted; the handler's answer, if any comes, changes nothing. */
  interrupted(message: ConsumeMessage): void {
    const attempt = this.take(message);
    if (attempt) attempt.outcome = 'interrupted';
  }

  parked(event: MessageParkedEvent): void {
    this.errorQueues.set(event.queue, event.errorQueue);
    const list = this.listOf(event.message);
    const attempt =
      [...list].reverse().find((a) => a.queue === event.queue && (a.outcome === 'failed' || a.outcome === 'running')) ??
      this.record(event, 0, 'parked');
    attempt.outcome = 'parked';
    attempt.parkReason = event.reason;
    if (event.error !== undefined && attempt.error === undefined) {
      attempt.error = errorMessage(event.error);
      attempt.thrown = event.error;
    }
  }

  /** A new attempt of the event's message, after its earlier ones (its `tier`: where the one before it went). */
  private record(event: DeliveryEvent | MessageParkedEvent, attempt: number, outcome: AttemptOutcome): HarnessAttempt {
    const list = this.listOf(event.message);
    const earlier = list.filter((a) => a.queue === event.queue);
    // A redelivery (after a lost connection) waited where its interrupted first try did; an attempt after a failure, where that failure sent it.
    const again = earlier.filter((a) => a.attempt === attempt && attempt > 0 && a.outcome !== 'running').at(-1);
    const tier = again ? again.tier : earlier.at(-1)?.retryTier;
    const entry: HarnessAttempt = {
      ...(typeof event.message.properties.messageId === 'string' ? { messageId: event.message.properties.messageId } : {}),
      queue: event.queue,
      ...(event.pattern !== undefined ? { pattern: event.pattern } : {}),
      attempt,
      at: this.elapsed(),
      ...(tier !== undefined ? { tier } : {}),
      outcome,
      headers: { ...event.message.properties.headers },
      redelivered: event.message.fields.redelivered,
    };
    list.push(entry);
    this.allAttempts.push(entry);
    return entry;
  }

  private listOf(message: ConsumeMessage): HarnessAttempt[] {
    const key = messageKey(message);
    let list = this.attemptsByMessage.get(key);
    if (!list) this.attemptsByMessage.set(key, (list = []));
    return list;
  }

  private take(message: ConsumeMessage): HarnessAttempt | undefined {
    const attempt = this.open.get(message);
    this.open.delete(message);
    return attempt;
  }
}
