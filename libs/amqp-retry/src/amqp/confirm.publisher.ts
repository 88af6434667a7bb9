import type { ConfirmChannel, Message, Options } from 'amqplib';
import { type DurationTimer, sleep, startTimer, withinTime } from '../core/duration.timer.js';
import { errorMessage } from '../core/error-message.js';
import { classifyChannelClose, type PublishFailure, publishOutcomeAfterClose } from '../core/publish-outcome.js';
import { PublishError } from '../errors/publish.error.js';
import type { AmqpConnection } from './amqp-connection.js';
import { findReturnedPublish, type PendingPublish } from './returned-publish.js';
import { WriteQueue } from './write.queue.js';

interface OpenChannel {
  channel: ConfirmChannel;
  /** Mandatory publishes awaiting their confirm, in publish order (a Set iterates in insertion order). */
  pending: Set<PendingPublish>;
  /** Why and with which code the broker closed the channel, once it has (the 'error' event comes before 'close'). */
  closedBecause?: string;
  closedWithCode?: number;
  /** Publishes wait here while the socket's write buffer is full, instead of piling up in memory. */
  writes: WriteQueue;
}

/** How publishes behave while the connection is down, blocked or slow. */
export interface PublishLimits {
  /** How long a publish may wait for the connection (re-sends included), or for a full write buffer to drain. */
  timeoutMs: number;
  /** How many publishes may wait for the connection at once; more reject at once. Never an unbounded queue in memory. */
  bufferSize: number;
  /** How long one send waits for the broker's confirm; a broker that blocks publishers (memory or disk alarm) never sends it. */
  confirmTimeoutMs: number;
}

/** What became of one send on one channel. */
type SendOutcome =
  { kind: 'confirmed' } | { kind: 'failed'; failure: PublishFailure } | { kind: 'closed'; reason?: string; code?: number } | { kind: 'timeout' };

/**
 * A publish is sent at most this many times when channels close under it for no reason that names an exchange (a
 * lost connection, an unattributable channel error). Closes that name another publish's exchange do not count: a
 * stream of bad publishes beside it must not fail a good one.
 */
const MAX_SENDS = 3;

/** How long close() waits for the broker to close a channel: a broker that blocks publishers never answers. */
const CLOSE_WAIT_MS = 1_000;

/**
 * For publishes that must not be sent twice when the broker is slow (parked copies, forwarded delayed messages): a
 * confirm that takes longer than confirmTimeout is waited for, reported through `onSlowConfirm`, until it comes or
 * `signal` aborts. A re-send after a timeout would add a copy when the broker finally reads the first one.
 */
export interface PublishPatience {
  signal: AbortSignal;
  onSlowConfirm: (waitedMs: number) => void;
}

/**
 * Publishes on a confirm channel; each publish settles when the broker has taken responsibility for the message.
 *
 * One publish's failure never fails its neighbours. The broker closes the whole channel over one bad publish (a
 * missing exchange is a 404, a forbidden one a 403), and amqplib then fails every unconfirmed publish on it, although
 * the broker had routed many of them. So a close is judged per publish: the one it names fails with the broker's
 * code; the others are sent again on a fresh channel (their outcome is unknown: at least once, never lost).
 * A lost connection likewise re-sends once it is back. Every publish is bounded in time: `timeoutMs` in all, and
 * `confirmTimeoutMs` per send, so a broker that blocks publishers gives a clear error instead of a hang.
 */
export class ConfirmPublisher {
  private current?: Promise<OpenChannel>;
  /** The channel once open, until it closes: the usual publish takes it without waiting on a promise. */
  private open?: OpenChannel;
  private waiting = 0;
  private closed = false;

  constructor(
    private readonly connection: AmqpConnection,
    private readonly limits: PublishLimits,
  ) {}

  /**
   * Resolves once the broker confirmed the message; rejects with PublishError when it nacked it, closed the channel
   * over it, (with `mandatory`, the default) no queue took it, or no confirm came in time.
   */
  async publish(exchange: string, routingKey: string, content: Buffer, options: Options.Publish = {}, patience?: PublishPatience): Promise<void> {
    const fail = (reason: string, code?: number) => new PublishError(exchange, routingKey, reason, code);
    const deadline = Date.now() + this.limits.timeoutMs;
    const mandatory = options.mandatory ?? true;
    let lastClose = '';
    for (let send = 1; ;) {
      if (this.closed) throw fail('the publisher is closed (the application is shutting down)');
      const open =
        this.open ??
        (await this.ready(deadline).catch((error: unknown) => {
          throw fail(lastClose ? `${lastClose}; then ${errorMessage(error)}` : errorMessage(error));
        }));
      // The turn and the write happen with no await in between (sendOnce writes synchronously), so a burst of
      // publishes cannot all pass a check before the first write fills the buffer.
      const turn = open.writes.turn();
      if (turn) await turn.catch((error: unknown) => Promise.reject(fail(errorMessage(error))));
      const outcome = await this.sendOnce(open, exchange, routingKey, content, { ...options, mandatory }, patience);
      switch (outcome.kind) {
        case 'confirmed':
          return;
        case 'failed':
          throw fail(outcome.failure.reason, outcome.failure.code);
        case 'timeout':
          throw fail(
            `the broker did not confirm it within ${this.limits.confirmTimeoutMs} ms (is it blocking publishers over a memory or disk alarm?); it may or may not have been delivered`,
          );
        case 'closed': {
          const close = classifyChannelClose(outcome.reason, outcome.code);
          const verdict = publishOutcomeAfterClose(close, exchange);
          if (verdict.action === 'fail') throw fail(verdict.reason, verdict.code);
          lastClose = `the channel closed before the broker confirmed it (${outcome.reason ?? 'connection lost'})`;
          if (close.exchange === undefined && ++send > MAX_SENDS) throw fail(`${lastClose}, ${MAX_SENDS} times`, outcome.code);
          if (Date.now() >= deadline) throw fail(lastClose, outcome.code);
        }
      }
    }
  }

  /** Rejects every later publish; closes the channel. Publishes awaiting a confirm settle with the channel. */
  async close(): Promise<void> {
    this.closed = true;
    const current = this.current;
    this.current = undefined;
    this.open = undefined;
    const open = await current?.catch(() => undefined);
    // Already closed with the connection; or never answered by a broker that blocks publishers: the connection's
    // close then ends it.
    if (open) await Promise.race([open.channel.close().catch(() => undefined), sleep(CLOSE_WAIT_MS, { unref: true })]);
  }

  private async sendOnce(
    open: OpenChannel,
    exchange: string,
    routingKey: string,
    content: Buffer,
    options: Options.Publish,
    patience: PublishPatience | undefined,
  ): Promise<SendOutcome> {
    const pending: PendingPublish = { exchange, routingKey, messageId: options.messageId, content, returned: false };
    if (options.mandatory) open.pending.add(pending);
    let timer: DurationTimer | undefined;
    const sentAt = Date.now();
    const onAbort = () => resolveOutcome?.({ kind: 'timeout' });
    let resolveOutcome: ((outcome: SendOutcome) => void) | undefined;
    patience?.signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await new Promise<SendOutcome>((resolve) => {
        resolveOutcome = resolve;
        const slow = () => {
          if (!patience) return resolve({ kind: 'timeout' });
          patience.onSlowConfirm(Date.now() - sentAt);
          timer = startTimer(this.limits.confirmTimeoutMs, slow);
        };
        timer = startTimer(this.limits.confirmTimeoutMs, slow);
        if (patience?.signal.aborted) resolve({ kind: 'timeout' });
        const settle = (error: unknown) => {
          if (!error) {
            if (pending.returned) resolve({ kind: 'failed', failure: { reason: 'no queue is bound to receive it (returned as unroutable)' } });
            else resolve({ kind: 'confirmed' });
          } else if (errorMessage(error) === 'message nacked') {
            this.retire(open);
            resolve({ kind: 'failed', failure: { reason: 'the broker nacked it (a queue at its length limit, or an internal error)' } });
          } else {
            resolve({ kind: 'closed', reason: open.closedBecause, code: open.closedWithCode });
          }
        };
        let written = true;
        try {
          written = open.channel.publish(exchange, routingKey, content, options, settle);
        } catch (error) {
          // amqplib refuses before writing anything: a header table it cannot encode, a closed channel.
          if (open.closedBecause !== undefined || /closed/i.test(errorMessage(error)))
            resolve({ kind: 'closed', reason: open.closedBecause, code: open.closedWithCode });
          else resolve({ kind: 'failed', failure: { reason: `amqplib could not send it: ${errorMessage(error)}` } });
        }
        open.writes.written(written);
      });
    } finally {
      timer?.cancel();
      patience?.signal.removeEventListener('abort', onAbort);
      open.pending.delete(pending);
    }
  }

  /**
   * After a nack the channel is not used again: the next publish opens a fresh one. RabbitMQ 3.10 nacks every
   * publish, for good, on a channel whose first publish to a quorum queue came during that queue's leader election
   * (a node lost, a client that failed over within 100 ms), while a fresh channel is confirmed at once (docs/design.md,
   * "Running on a cluster"). The old channel is closed once its other publishes had time to settle.
   */
  private retire(open: OpenChannel): void {
    if (this.open !== open) return;
    this.open = undefined;
    this.current = undefined;
    startTimer(this.limits.confirmTimeoutMs, () => void open.channel.close().catch(() => undefined)).unref();
  }

  /** The channel, once the connection is up (within the publish's deadline). */
  private async ready(deadline: number): Promise<OpenChannel> {
    if (!this.connection.isConnected) {
      if (this.waiting >= this.limits.bufferSize) {
        throw new Error(`the connection is down and ${this.waiting} publishes already wait for it (publishBufferSize)`);
      }
      this.waiting++;
      try {
        await this.connection.whenConnected(Math.max(0, deadline - Date.now()), this.limits.timeoutMs);
      } finally {
        this.waiting--;
      }
    }
    // A broker that blocks publishers does not answer channel.open either.
    return withinTime(
      this.channel(),
      Math.max(0, deadline - Date.now()),
      () => new Error(`no channel could be opened within ${this.limits.timeoutMs} ms (publishTimeout)`),
    );
  }

  private channel(): Promise<OpenChannel> {
    if (this.current) return this.current;
    const opening = this.connection.createConfirmChannel().then((channel) => {
      const open: OpenChannel = { channel, pending: new Set(), writes: new WriteQueue(this.limits.timeoutMs) };
      channel.on('drain', () => open.writes.drained());
      channel.on('return', (message: Message) => {
        const publish = findReturnedPublish(open.pending, message);
        if (publish) publish.returned = true;
      });
      channel.on('error', (error: Error & { code?: unknown }) => {
        open.closedBecause = error.message.replace(/^.*?with message "(.*)"$/, '$1');
        if (typeof error.code === 'number') open.closedWithCode = error.code;
      });
      channel.on('close', () => {
        open.writes.closed();
        if (this.open === open) this.open = undefined;
        if (this.current === opening) this.current = undefined;
      });
      this.open = open;
      return open;
    });
    this.current = opening;
    opening.catch(() => {
      if (this.current === opening) this.current = undefined;
    });
    return opening;
  }
}
