import { closeWhenOpen, SharedChannel } from './channel-close.settler.js';
import type { Message, Options } from 'amqplib';
import { sleep, withinTime } from '../core/time/duration.timer.js';
import { errorMessage } from '../core/text/error-message.format.js';
import {
  abandonedReason,
  classifyChannelClose,
  publishOutcomeAfterClose,
  UNROUTABLE_REASON,
  UNSENDABLE_REASON,
} from '../core/publish/publish.outcome.js';
import { PublishError } from '../errors/publish.error.js';
import type { AmqpConnection } from './amqp.connection.js';
import { findReturnedPublish } from './returned-publish.matcher.js';
import { WriteQueue } from '../core/publish/pending-writes.queue.js';
import { DeadlineClock } from '../core/time/deadline.clock.js';
import { copyOwn } from '../core/headers/own-keys.copy.js';
import { type OpenChannel, Publish, type PublishPatience, type SendOutcome } from './confirm.publish.js';

export type { PublishPatience } from './confirm.publish.js';

/** How publishes behave while the connection is down, blocked or slow. */
export interface PublishLimits {
  /** How long a publish may wait for the connection (re-sends included), or for a full write buffer to drain. */
  timeoutMs: number;
  /** How many publishes may wait for the connection at once; more reject at once. */
  bufferSize: number;
  /** How long one send waits for the broker's confirm; a broker that blocks publishers (memory or disk alarm) never sends it. */
  confirmTimeoutMs: number;
}

/**
 * Sends of one publish whose channel closed for no reason naming an exchange (a lost connection). Closes over another
 * publish's exchange or size do not count: bad publishes beside it must not fail a good one.
 */
const MAX_SENDS = 3;
/** The caller's options, copied (never changed), with `mandatory` (copyOwn: no spread, see docs/performance.md). */
const withMandatory = (options: Options.Publish): Options.Publish => Object.assign(copyOwn(options), { mandatory: true });

const CLOSED_REASON = 'the publisher is closed (the application is shutting down)';

/** Why a publish was not sent (again) once the publisher closed: a send before it may have reached the broker. */
const closedReason = (publish: Publish): string =>
  publish.lastClose ? `${publish.lastClose}; then ${CLOSED_REASON}; it may or may not have been delivered` : CLOSED_REASON;

/**
 * How often at most a publisher retires its channel after a nack. Nacks from a queue at its length limit
 * (`reject-publish`) come one per publish, and a fresh channel never helps them: retiring on each would open a
 * channel per nack, up to the connection's channel_max.
 */
const RETIRE_INTERVAL_MS = 1_000;

/**
 * Publishes on a confirm channel; each publish settles when the broker has taken responsibility for the message.
 *
 * One publish's failure never fails its neighbours. The broker closes the whole channel over one bad publish (a 404,
 * a 403), and amqplib then fails every unconfirmed publish on it, although the broker had routed many. So a close is
 * judged per publish: the one it names fails with the broker's code; the others are sent again on a fresh channel (at
 * least once, never lost), as after a lost connection. Every publish is bounded in time (`timeoutMs` in all,
 * `confirmTimeoutMs` per send), so a broker that blocks publishers gives an error, not a hang.
 *
 * Each publish is one record (Publish) from call to outcome, and no async frame is suspended per publish: a flood of
 * 100,000 holds 100,000 small records.
 */
export class ConfirmPublisher {
  private readonly current = new SharedChannel<OpenChannel>();
  /** The channel while open: the usual publish takes it without waiting on a promise. */
  private open?: OpenChannel;
  private waiting = 0;
  private closed = false;
  /** When the last channel was retired after a nack (performance.now()). */
  private retiredAt = -Infinity;
  /** The retired channels not closed yet: close() closes them too. */
  private readonly retiredChannels = new Set<OpenChannel>();
  /** Sends awaiting the broker's answer, on every channel: close() waits for them. */
  private unanswered = 0;
  /** While close() waits: aborted once no send awaits an answer. */
  private allAnswered?: AbortController;

  constructor(
    private readonly connection: AmqpConnection,
    private readonly limits: PublishLimits,
  ) {}

  /**
   * Resolves once the broker confirmed the message; rejects with PublishError when it nacked it, closed the channel
   * over it, no queue took it (`mandatory`, the default), or no confirm came in time.
   *
   * Its waits for the connection, a channel and the sends again end at `deadline` (a Date.now() time): a caller that
   * waited before publishing passes the deadline of its whole publish. Without one, `timeoutMs` from now.
   */
  publish(
    exchange: string,
    routingKey: string,
    content: Buffer,
    options: Options.Publish = {},
    patience?: PublishPatience,
    deadline?: number,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // Options that already say `mandatory` (RetryPublisher's) are not copied.
      const sent = options.mandatory === undefined ? withMandatory(options) : options;
      const until = deadline ?? Date.now() + this.limits.timeoutMs;
      this.attempt(new Publish(this, exchange, routingKey, content, sent, patience, until, resolve, reject));
    });
  }

  /**
   * Rejects every publish not sent yet (the publisher is closed), then lets the sends made get the broker's answer, for
   * at most `confirmTimeoutMs`: closing their channel under them would reject a message the broker may have taken, and a
   * caller that publishes it again on that error sends it twice. A send still unanswered then rejects saying it may or
   * may not have been delivered. Last, the channels close, retired ones included.
   */
  async close(): Promise<void> {
    this.closed = true;
    const current = this.current.take();
    const inUse = this.open;
    this.open = undefined;
    await this.sendsAnswered();
    const reason = `the publisher closed before the broker confirmed it (the application is shutting down; it waits at most ${this.limits.confirmTimeoutMs} ms, confirmTimeout, for confirms); it may or may not have been delivered`;
    for (const open of [inUse, ...this.retiredChannels]) {
      for (const publish of open?.confirms.waiting() ?? []) this.settle(publish, { kind: 'failed', failure: { reason } });
    }
    const closing = [...this.retiredChannels].map((open) => {
      open.retired = false; // closed here, not again once idle
      return closeWhenOpen(Promise.resolve(open.channel));
    });
    this.retiredChannels.clear();
    // A broker that blocks publishers answers neither open nor close: the connection's close then ends it.
    closing.push(closeWhenOpen(current?.then((open) => open.channel)));
    await Promise.all(closing);
  }

  /** Within `confirmTimeoutMs`, the moment no send awaits the broker's answer. */
  private async sendsAnswered(): Promise<void> {
    if (this.unanswered === 0) return;
    this.allAnswered = new AbortController();
    await sleep(this.limits.confirmTimeoutMs, { signal: this.allAnswered.signal });
    this.allAnswered = undefined;
  }

  /** One send of `publish`: at once on the open channel (or in its write line), else once a channel is open. */
  private attempt(publish: Publish): void {
    if (this.closed) return publish.failWith(closedReason(publish));
    const open = this.open;
    if (open) return this.writeOrQueue(publish, open);
    this.ready(publish.deadline).then(
      (opened) => this.writeOrQueue(publish, opened),
      (error: unknown) => {
        if (this.closed) return publish.failWith(closedReason(publish));
        publish.failWith(publish.lastClose ? `${publish.lastClose}; then ${errorMessage(error)}` : errorMessage(error));
      },
    );
  }

  /** Writes now while the socket's buffer has room, else the publish waits in line. */
  private writeOrQueue(publish: Publish, open: OpenChannel): void {
    publish.channel = open;
    if (open.writes.mustWait()) open.writes.enqueue(publish);
    else this.write(publish, open);
  }

  /**
   * One send, settled by the broker's answer or the channel's confirm clock, whichever comes first.
   * @internal Publish's turn in the write line.
   */
  write(publish: Publish, open: OpenChannel): void {
    const { patience } = publish;
    // Once the publisher closed, nothing more is sent: its channel closes once the sends made were answered.
    if (patience?.signal.aborted || this.closed) {
      open.writes.written(true); // nothing written: the next in line goes on
      this.closeWhenIdle(open);
      return publish.failWith(this.closed ? closedReason(publish) : abandonedReason(patience?.signal));
    }
    publish.begin(open);
    this.unanswered++;
    if (publish.options.mandatory) open.pending.add(publish);
    open.confirms.track(publish);
    if (patience) patience.signal.addEventListener('abort', publish.onAbort(), { once: true });
    let written = true;
    try {
      written = open.channel.publish(publish.exchange, publish.routingKey, publish.content, publish.options, publish.confirmed);
    } catch (error) {
      // amqplib refuses before writing anything: a header table it cannot encode, a closed or closing channel. A closing
      // one is no longer used: the send again must not meet it before its 'close'.
      if (open.closedBecause !== undefined || /clos(?:ed|ing)/i.test(errorMessage(error))) {
        if (this.open === open) {
          this.open = undefined;
          this.current.take();
        }
        this.settle(publish, { kind: 'closed', reason: open.closedBecause, code: open.closedWithCode });
      } else this.settle(publish, { kind: 'failed', failure: { reason: `${UNSENDABLE_REASON}: ${errorMessage(error)}` } });
    }
    open.writes.written(written);
  }

  /** @internal amqplib's callback of a send: no error is an ack. */
  answered(publish: Publish, error: unknown): void {
    const open = publish.channel as OpenChannel;
    if (!error) this.settle(publish, publish.returned ? { kind: 'failed', failure: { reason: UNROUTABLE_REASON } } : { kind: 'confirmed' });
    else if (errorMessage(error) === 'message nacked') {
      this.retire(open);
      this.settle(publish, { kind: 'failed', failure: { reason: 'the broker nacked it (a queue at its length limit, or an internal error)' } });
    } else this.settle(publish, { kind: 'closed', reason: open.closedBecause, code: open.closedWithCode });
  }

  /** @internal What became of one send: the publish resolves, rejects, or is sent again. */
  settle(publish: Publish, outcome: SendOutcome): void {
    const open = publish.end();
    if (!open) return; // settled already (a timeout, then the late confirm)
    if (--this.unanswered === 0) this.allAnswered?.abort();
    open.confirms.stop(publish);
    open.pending.delete(publish);
    this.closeWhenIdle(open);
    const { exchange, routingKey } = publish;
    switch (outcome.kind) {
      case 'confirmed':
        return publish.resolve();
      case 'failed':
        return publish.reject(new PublishError(exchange, routingKey, outcome.failure.reason, outcome.failure.code));
      case 'timeout':
        return publish.failWith(this.unconfirmedReason());
      case 'closed': {
        const close = classifyChannelClose(outcome.reason, outcome.code);
        const verdict = publishOutcomeAfterClose(close, exchange, publish.content.length, routingKey);
        if (verdict.action === 'fail') return publish.reject(new PublishError(exchange, routingKey, verdict.reason, verdict.code));
        publish.lastClose = `the channel closed before the broker confirmed it (${outcome.reason ?? 'connection lost'})`;
        // Given up without the close's code: it was about another publish (or none), and a 404 or 403 here would make
        // this one look refused (an outbox row parked, a target taken for missing).
        if (close.exchange === undefined && close.maxMessageSize === undefined && ++publish.sends > MAX_SENDS)
          return publish.reject(new PublishError(exchange, routingKey, `${publish.lastClose}, ${MAX_SENDS} times`));
        if (Date.now() >= publish.deadline) return publish.reject(new PublishError(exchange, routingKey, publish.lastClose));
        // Sent again once the close has run its course: amqplib fails a closing channel's publishes from its own
        // 'close' listener, before ours forgets the channel (and before the connection's close, if it goes too).
        queueMicrotask(() => this.attempt(publish));
        return;
      }
    }
  }

  private unconfirmedReason(): string {
    return `the broker did not confirm it within ${this.limits.confirmTimeoutMs} ms (is it blocking publishers over a memory or disk alarm?); it may or may not have been delivered`;
  }

  /**
   * After a nack the next publish opens a fresh channel: RabbitMQ 3.10 nacks every publish, for good, on a channel
   * whose first publish to a quorum queue came during its leader election (docs/design.md, "Running on a cluster").
   * At most once per RETIRE_INTERVAL_MS: a nack within it leaves the channel in use. The old channel closes as soon
   * as none of its sends awaits a confirm: each send ends at its own deadline, confirmTimeout or, for a patient one,
   * its signal. Closing it earlier would fail a patient send whose copy the broker may have routed, and its send
   * again on the fresh channel would add a second copy.
   */
  private retire(open: OpenChannel): void {
    if (this.open !== open) return;
    const now = performance.now();
    if (now - this.retiredAt < RETIRE_INTERVAL_MS) return;
    this.retiredAt = now;
    this.open = undefined;
    this.current.take();
    open.retired = true;
    this.retiredChannels.add(open);
  }

  /**
   * Closes a retired channel once none of its sends awaits a confirm and none waits in its write line.
   * @internal Also a write that left the line without a send (the buffer stayed full).
   */
  closeWhenIdle(open: OpenChannel): void {
    if (!open.retired || open.confirms.size > 0 || open.writes.size > 0) return;
    open.retired = false;
    this.retiredChannels.delete(open);
    void open.channel.close().catch(() => undefined);
  }

  /** The channel, once the connection is up (within the deadline); a connection that drops while it opens is waited for again. */
  private async ready(deadline: number): Promise<OpenChannel> {
    for (;;) {
      if (!this.connection.isConnected) await this.connected(deadline);
      if (this.closed) throw new Error(CLOSED_REASON); // closed while this publish waited: open nothing more
      try {
        // A broker that blocks publishers does not answer channel.open either.
        return await withinTime(
          this.channel(),
          Math.max(0, deadline - Date.now()),
          () => new Error(`no channel could be opened within ${this.limits.timeoutMs} ms (publishTimeout)`),
        );
      } catch (error) {
        // Loops only after a loss of the connection: the next turn waits for the reconnection.
        if (this.closed || this.connection.isConnected || Date.now() >= deadline) throw error;
      }
    }
  }

  /**
   * Resolves at once while the connection is up; else waits for it within `deadline`, as one of the publishes waiting
   * for it (`bufferSize`), and rejects as a publish that waited would.
   */
  async whenConnected(deadline: number): Promise<void> {
    if (this.closed) throw new Error(CLOSED_REASON);
    if (!this.connection.isConnected) await this.connected(deadline);
  }

  /** Waits for the connection within the deadline, as one of at most `bufferSize` publishes waiting for it. */
  private async connected(deadline: number): Promise<void> {
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

  private channel(): Promise<OpenChannel> {
    return this.current.get((forget) =>
      this.connection.createConfirmChannel().then((channel) => {
        const open: OpenChannel = {
          channel,
          pending: new Set(),
          writes: new WriteQueue(this.limits.timeoutMs),
          confirms: new DeadlineClock(this.limits.confirmTimeoutMs),
          retired: false,
        };
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
          // Forgotten first: the publishes the line lets go now must find no open channel here.
          if (this.open === open) this.open = undefined;
          this.retiredChannels.delete(open);
          forget();
          open.writes.closed();
        });
        this.open = open;
        return open;
      }),
    );
  }
}
