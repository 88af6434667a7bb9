import { setMaxListeners } from 'node:events';
import type { Channel, ConsumeMessage } from 'amqplib';
import { DeliveryGate, type GatePass } from '../core/delivery/delivery.gate.js';
import { type DurationTimer, startTimer } from '../core/time/duration.timer.js';
import { classifyConsumerLoss, type ConsumerLossEvent, type ConsumerLossVerdict } from '../core/connection/consumer-loss.classifier.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { reconnectDelay, type ReconnectPolicy } from '../core/connection/reconnect.policy.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import { AckBatcher } from './ack.batcher.js';
import type { AmqpConnection } from './amqp.connection.js';
import { queueExists } from './queue-exists.probe.js';

/** The least time between two resumptions at once after a lost consumer; a quicker loss resumes with backoff. */
const QUICK_RESUME_SPACING_MS = 1000;

/** Settles one delivery on the channel that delivered it. */
export interface Settle {
  ack(): void;
  /** `requeue: false` dead-letters the message (the retry path); `true` puts it back in the queue. */
  nack(requeue: boolean): void;
}

/**
 * Handles one delivery and settles it through `settle`; a rejection is logged (the message stays unacked). `signal`
 * aborts when the delivery can no longer be settled (its channel is gone) or the shutdown timeout has passed.
 */
export type DeliveryHandler = (message: ConsumeMessage, settle: Settle, signal: AbortSignal) => Promise<void>;

export interface QueueConsumerOptions {
  queue: string;
  prefetch: number;
  connection: AmqpConnection;
  logger: RetryLogger;
  /** Spacing of the attempts to resume after the broker closed the channel or cancelled the consumer. */
  resume: ReconnectPolicy;
  /** Declares the queue's topology again before resuming (it may have been deleted). */
  redeclare: () => Promise<unknown>;
  /**
   * A delivery that may have crashed its process before (a quorum queue's redelivery): handled alone, with nothing
   * else unsettled where possible, so that a crash counts against it only. Absent: no delivery is suspect.
   */
  isSuspect?: (message: ConsumeMessage) => boolean;
  /** Told when the consumer goes up or down. */
  observers?: ObserverHub;
}

/** One channel's life: what it delivered and settles, and a signal that aborts when it is gone. */
interface Subscription {
  channel: Channel;
  batcher: AckBatcher;
  abort: AbortController;
  /** The gate passes of its handlers running now: detached when the channel dies. */
  passes: Set<GatePass>;
  /** Its deliveries not settled yet (running or waiting for the gate); `idle` wakes those waiting for none. */
  unsettled: number;
  /** When each of them was delivered, for the age of the oldest (a consumer timeout's log line). */
  held: Set<Delivery>;
  idle: Array<() => void>;
  consumerTag?: string;
  /** Prefetch 1 while suspects are about (quorum): a crash then finds only the suspect unsettled. */
  careful: boolean;
  /** The pace of the consumer subscribed now, and whether a change waits for the channel to hold no delivery. */
  subscribedCareful?: boolean;
  paceSwitchPending?: boolean;
}

/**
 * One consumer on one queue, on a channel of its own, with the channel's whole life: prefetch, deliveries in
 * flight, graceful stop, and resumption.
 *
 * The channel can die under it: with the connection (the connection's recovery calls `start()` again) or alone,
 * closed by the broker, or its consumer be cancelled (the queue was deleted): then it declares the topology again
 * and resumes, with backoff. Deliveries of a dead channel are never settled on another one (acks are valid only
 * on the channel that delivered): the broker requeued them, and they come back redelivered. Their handlers are told
 * through their AbortSignal, and still count toward `prefetch` until they return.
 *
 * Suspects (see `isSuspect`): a quorum queue counts every delivery that was not settled, so when a poison message
 * crashes the process, everything unsettled beside it is counted too. A suspect therefore runs alone, and the
 * consumer drops to prefetch 1 until a delivery that is not suspect shows the redeliveries are through (the queue
 * hands back returned messages first): a poison message then crashes with nothing beside it, and only it nears the
 * redelivery limit.
 */
export class QueueConsumer {
  private subscription?: Subscription;
  private starting?: Promise<void>;
  private switching: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Set by handOver(): deliveries it does not admit are left unstarted, for the broker to requeue. */
  private admitOnly?: (message: ConsumeMessage) => boolean;
  private resumeAttempt = 0;
  private resumeTimer?: DurationTimer;
  private lastQuickResume = 0;
  private readonly gate: DeliveryGate;
  /** Handlers running or waiting for the gate, across channels; `idle` wakes those waiting for them to finish. */
  private inFlight = 0;
  private readonly idle: Array<() => void> = [];
  /** Not consuming on purpose (the queue is paused, or its circuit open): the channel stays, across reconnections too. */
  private held = false;
  /** The prefetch while not careful: the configured one, or another set by release() (a circuit's trial calls). */
  private pace?: number;

  constructor(
    private readonly options: QueueConsumerOptions,
    private readonly handle: DeliveryHandler,
  ) {
    this.gate = new DeliveryGate(options.prefetch);
  }

  get queue(): string {
    return this.options.queue;
  }

  /** Deliveries taken and not yet settled (handlers running or waiting for the gate): the page's "in flight". */
  get inFlightCount(): number {
    return this.inFlight;
  }

  /** True while a channel consumes the queue. */
  get isConsuming(): boolean {
    return this.subscription?.consumerTag !== undefined;
  }

  /** True while held by hold(): not consuming on purpose. */
  get isHeld(): boolean {
    return this.held;
  }

  /**
   * Stops taking deliveries (basic.cancel) and stays so, across reconnections, until release(). The channel stays
   * open: deliveries in flight finish and settle on it. The cancel goes out at once, before any settlement that
   * follows the call, so a settlement cannot make room for one more delivery.
   */
  hold(reason: string): void {
    if (this.held) return;
    this.held = true;
    const subscription = this.subscription;
    const tag = subscription?.consumerTag;
    if (!subscription || tag === undefined) return;
    subscription.consumerTag = undefined;
    subscription.channel.cancel(tag).catch(() => undefined); // a dead channel has no consumer left either
    this.down(reason);
  }

  /**
   * Consumes again after hold(), at `prefetch` (default: the configured one); while consuming at another prefetch,
   * subscribes again at this one (a prefetch applies to consumers subscribed after it is set).
   */
  release(prefetch: number = this.options.prefetch): void {
    const changed = prefetch !== (this.pace ?? this.options.prefetch);
    this.pace = prefetch === this.options.prefetch ? undefined : prefetch;
    if (!this.held && !changed) return;
    this.held = false;
    this.switching = this.switching.then(async () => {
      await this.starting?.catch(() => undefined); // an open() in progress subscribes by itself
      const subscription = this.subscription;
      if (!subscription || this.stopped || this.held) return; // no channel: start() subscribes once there is one
      try {
        if (subscription.consumerTag !== undefined) {
          const tag = subscription.consumerTag;
          subscription.consumerTag = undefined;
          await subscription.channel.cancel(tag);
        }
        if (this.subscription === subscription && !this.stopped && !this.held) await this.subscribe(subscription);
      } catch {
        // the channel died meanwhile: its close handler takes over
      }
    });
  }

  /** Opens a channel and consumes; does nothing while one is open or opening, or after stop(). */
  start(): Promise<void> {
    if (this.stopped || this.subscription) return Promise.resolve();
    this.starting ??= this.open().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async open(): Promise<void> {
    const { connection, queue } = this.options;
    const channel = await connection.createChannel(`queue "${queue}"`, true); // its loss is logged here, once, with its cause
    const abort = new AbortController();
    // One signal is shared by every delivery of the channel, and handlers (and the parker) listen to it: up to
    // `prefetch` listeners is normal, not the leak Node warns about past 10.
    setMaxListeners(0, abort.signal);
    const subscription: Subscription = {
      channel,
      batcher: new AckBatcher(channel, (error) => this.dropped(subscription, error)),
      abort,
      passes: new Set(),
      unsettled: 0,
      held: new Set(),
      idle: [],
      careful: this.options.isSuspect !== undefined,
    };
    // The broker closing this channel alone sends a reason first ('error'); a dying connection closes it silently.
    let brokerReason: string | undefined;
    channel.on('error', (error: Error) => (brokerReason = error.message));
    channel.on('close', () => this.onChannelClosed(subscription, brokerReason));
    if (this.stopped) return void (await channel.close().catch(() => undefined));
    this.subscription = subscription;
    if (!this.held) await this.subscribe(subscription);
    if (this.stopped) return this.closeChannel(subscription); // stop() ran meanwhile: leave no orphan consumer
    this.resumeAttempt = 0;
  }

  private async subscribe(subscription: Subscription): Promise<void> {
    const { channel, careful } = subscription;
    subscription.subscribedCareful = careful;
    await channel.prefetch(careful ? 1 : (this.pace ?? this.options.prefetch));
    const { consumerTag } = await channel.consume(this.options.queue, (message) => this.track(subscription, message, careful), { noAck: false });
    subscription.consumerTag = consumerTag;
    if (this.stopped) return void (await channel.cancel(consumerTag).catch(() => undefined)); // stop() came while we subscribed
    if (this.held) {
      subscription.consumerTag = undefined; // hold() came while we subscribed
      return void (await channel.cancel(consumerTag).catch(() => undefined));
    }
    if (this.options.observers?.active) this.options.observers.emit('consumerUp', { queue: this.options.queue });
  }

  /**
   * Stops taking deliveries, lets the deliveries in flight finish and settle for up to `timeoutMs`, then closes the
   * channel. Handlers still running then are told through their signal and abandoned: the broker requeues their
   * messages when the channel closes.
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    this.resumeTimer?.cancel();
    this.resumeTimer = undefined;
    await this.starting?.catch(() => undefined);
    await this.switching; // a change of pace in progress must not subscribe again behind our back
    const subscription = this.subscription;
    if (subscription?.consumerTag) {
      await subscription.channel.cancel(subscription.consumerTag).catch(() => undefined);
      this.down('the application is stopping');
    }
    const timedOut = await this.idleWithin(timeoutMs);
    if (timedOut) {
      this.options.logger.warn(
        `"${this.options.queue}": ${this.inFlight} handler(s) still running after ${timeoutMs} ms; closing, their messages will be redelivered`,
      );
      if (subscription) abort(subscription, `the shutdown timeout (${timeoutMs} ms) has passed`);
    }
    if (subscription) await this.closeChannel(subscription);
  }

  /**
   * Gives the queue up to another consumer (a partition moving to another instance) without two of them ever handling
   * its messages at once: the subscription stays, so a single-active-consumer queue keeps delivering here and nowhere
   * else; no delivery starts any more; the deliveries' signal aborts at once, so those waiting (for their key's turn,
   * for a retry in place) give up unsettled; the handlers running finish and settle for up to `timeoutMs`; then the
   * channel closes without a cancel first, so the broker requeues what was not settled in its places and only then
   * activates the next consumer. After the timeout, handlers still running are abandoned (their messages are
   * redelivered to the next consumer). The consumer is finished afterwards, like after stop().
   */
  async handOver(timeoutMs: number): Promise<void> {
    this.stopped = true;
    this.admitOnly = () => false;
    if (this.subscription) abort(this.subscription, 'the queue is handed over to another consumer');
    this.resumeTimer?.cancel();
    this.resumeTimer = undefined;
    await this.starting?.catch(() => undefined);
    await this.switching;
    const subscription = this.subscription;
    const timedOut = await this.idleWithin(timeoutMs);
    if (timedOut) {
      this.options.logger.warn(
        `"${this.options.queue}": ${this.inFlight} handler(s) still running after ${timeoutMs} ms of handing over; closing, their messages will be redelivered`,
      );
    }
    if (subscription) {
      if (subscription.consumerTag) this.down('handed over to another consumer');
      await this.closeChannel(subscription);
    }
  }

  /** Waits until no handler runs, at most `timeoutMs`; true when the time ran out first. */
  private async idleWithin(timeoutMs: number): Promise<boolean> {
    let timer: DurationTimer | undefined;
    const timedOut = await Promise.race([
      this.whenIdle().then(() => false),
      new Promise<boolean>((resolve) => (timer = startTimer(timeoutMs, () => resolve(true)))),
    ]);
    timer?.cancel();
    return timedOut;
  }

  private async closeChannel(subscription: Subscription): Promise<void> {
    subscription.batcher.flush();
    if (this.subscription === subscription) this.subscription = undefined;
    await subscription.channel.close().catch(() => undefined);
  }

  /** `carefully`: delivered by a consumer at prefetch 1, whose deliveries tell whether the suspects are through. */
  private track(subscription: Subscription, message: ConsumeMessage | null, carefully: boolean): void {
    if (message === null) return this.onCancelled(subscription);
    subscription.batcher.delivered(message);
    if (this.admitOnly && !this.admitOnly(message)) return; // handing over: the channel's close requeues it
    const suspect = this.options.isSuspect?.(message) ?? false;
    this.inFlight++;
    subscription.unsettled++;
    const delivery = new Delivery(message, subscription.batcher);
    subscription.held.add(delivery);
    // After counting it: the change of pace waits until the channel holds no delivery, this one included.
    if (!this.stopped && (suspect ? !subscription.careful : subscription.careful && carefully)) this.changePace(subscription, suspect);
    // The usual case runs at once, without a promise of its own: this is every message's path.
    const pass = this.gate.tryEnter(suspect);
    if (pass) this.begin(subscription, delivery, pass);
    else void this.gate.enter(suspect).then((later) => this.begin(subscription, delivery, later));
  }

  /** A delivery whose channel died while it waited is not handled: the broker redelivers it. */
  private begin(subscription: Subscription, delivery: Delivery, pass: GatePass): void {
    if (subscription.abort.signal.aborted) this.finish(subscription, delivery, pass);
    else this.run(subscription, delivery, pass);
  }

  /** Runs one delivery's handler in its place in the gate; never throws, never rejects. */
  private run(subscription: Subscription, delivery: Delivery, pass: GatePass): void {
    subscription.passes.add(pass);
    let running: Promise<void>;
    try {
      running = this.handle(delivery.message, delivery, subscription.abort.signal);
    } catch (error) {
      running = Promise.reject(error);
    }
    // Promise.resolve: a handler from JavaScript that returns a plain value must still finish, not throw here.
    Promise.resolve(running).then(
      () => this.finish(subscription, delivery, pass),
      (error: unknown) => {
        this.options.logger.error(`Unexpected failure handling a message from "${this.options.queue}": ${errorMessage(error)}`);
        this.finish(subscription, delivery, pass);
      },
    );
  }

  /** A delivery's handler returned (or its channel died while it waited for the gate): its place and counts are free. */
  private finish(subscription: Subscription, delivery: Delivery, pass: GatePass): void {
    subscription.held.delete(delivery);
    subscription.passes.delete(pass);
    pass.leave();
    if (--subscription.unsettled === 0) for (const wake of subscription.idle.splice(0)) wake();
    if (--this.inFlight === 0) for (const wake of this.idle.splice(0)) wake();
  }

  /** Resolves once no handler runs or waits. */
  private whenIdle(): Promise<void> {
    return this.inFlight === 0 ? Promise.resolve() : new Promise((resolve) => this.idle.push(resolve));
  }

  /**
   * Re-subscribes at prefetch 1 (a suspect came) or at full prefetch (the suspects are through), once the channel
   * holds no delivery: a consumer cancelled while it holds deliveries is one the broker can no longer tell of a
   * consumer timeout (RabbitMQ 4.3 then closes the channel and still delivers on it, which costs amqplib the whole
   * connection). Until then the gate keeps a suspect alone.
   */
  private changePace(subscription: Subscription, careful: boolean): void {
    subscription.careful = careful;
    if (subscription.paceSwitchPending) return; // the pending switch reads `careful` when it runs
    subscription.paceSwitchPending = true;
    const whenIdle = (): void => {
      if (subscription.unsettled > 0) return void subscription.idle.push(whenIdle);
      subscription.paceSwitchPending = false;
      this.switchPace(subscription);
    };
    whenIdle();
  }

  private switchPace(subscription: Subscription): void {
    this.switching = this.switching.then(async () => {
      if (this.subscription !== subscription || this.stopped || this.held || subscription.subscribedCareful === subscription.careful) return;
      try {
        if (subscription.consumerTag) await subscription.channel.cancel(subscription.consumerTag);
        subscription.consumerTag = undefined;
        if (this.subscription === subscription && !this.stopped && !this.held) await this.subscribe(subscription);
      } catch {
        // the channel died meanwhile: its close handler takes over
      }
    });
  }

  /** A settlement on a closed channel: expected (and already told) when the channel's deliveries were lost. */
  private dropped(subscription: Subscription, error: unknown): void {
    const line = `Dropped a settlement for "${this.options.queue}" on a closed channel (${errorMessage(error)}); the broker redelivers the message`;
    if (subscription.abort.signal.aborted) this.options.logger.debug(line);
    else this.options.logger.warn(line);
  }

  /** What the consumer knows of a loss of its channel's deliveries, for classifyConsumerLoss. */
  private lossOf(subscription: Subscription, event: ConsumerLossEvent['event']): ConsumerLossEvent {
    let oldest: number | undefined;
    for (const delivery of subscription.held) oldest = Math.min(oldest ?? delivery.at, delivery.at);
    const oldestHeldMs = oldest === undefined ? undefined : Date.now() - oldest;
    return { event, queue: this.options.queue, unsettled: subscription.unsettled, oldestHeldMs };
  }

  private onChannelClosed(subscription: Subscription, brokerReason: string | undefined): void {
    const verdict = classifyConsumerLoss({ ...this.lossOf(subscription, 'channel-closed'), brokerReason });
    abort(subscription, `the channel consuming "${this.options.queue}" closed${brokerReason ? ` (${brokerReason})` : ''}`);
    if (this.subscription !== subscription) return;
    this.subscription = undefined;
    this.down(brokerReason ?? 'the connection closed');
    this.resumeAfter(verdict); // after a lost connection, its recovery restarts us
  }

  /**
   * The broker cancelled the consumer: the queue was deleted, or (RabbitMQ 4.3, quorum queues) a consumer timeout
   * expired and took the unsettled deliveries back. Their handlers are told through their signal. The channel stays
   * open until they return (closing a channel the broker may still deliver on can cost the whole connection), with a
   * `basic.cancel` of our own, so that the broker forgets the consumer too (4.3 keeps a timed-out one and cancels it
   * again later, which amqplib would not know); a fresh channel takes over.
   */
  private onCancelled(subscription: Subscription): void {
    if (this.subscription !== subscription) return;
    this.subscription = undefined;
    const tag = subscription.consumerTag;
    subscription.consumerTag = undefined;
    this.down('the broker cancelled the consumer');
    const loss = this.lossOf(subscription, 'cancelled');
    if (loss.unsettled > 0) abort(subscription, `the broker cancelled the consumer of "${this.options.queue}" and took its deliveries back`);
    void this.retire(subscription, tag);
    const { connection, queue } = this.options;
    void queueExists(() => connection.createChannel(`queue "${queue}" check`, true), queue)
      .catch(() => undefined)
      .then((exists) => this.resumeAfter(classifyConsumerLoss({ ...loss, queueExists: exists })));
  }

  /**
   * Retires a channel whose consumer the broker cancelled: our own `basic.cancel` first (the broker then delivers
   * nothing more on it), then its deliveries are given back (`nack` with requeue; the broker ignores it for those it
   * took back already) and the channel closes. Left unsettled, they would keep the channel's own consumer-timeout
   * check busy (RabbitMQ 4.3 runs one on the channel besides the queue's), which closes the channel while the queue
   * still delivers on it: amqplib then drops the whole connection. Their handlers run on, with aborted signals; what
   * they settle later is dropped.
   */
  private async retire(subscription: Subscription, tag: string | undefined): Promise<void> {
    if (tag) await subscription.channel.cancel(tag).catch(() => undefined);
    for (const delivery of subscription.held) delivery.giveBack();
    await this.closeChannel(subscription);
  }

  /** Logs the loss's one line and consumes again: at once on a fresh channel, or after declaring again, with backoff. */
  private resumeAfter(verdict: ConsumerLossVerdict): void {
    if (verdict.resume === 'connection' || this.stopped) return;
    // At once, but never in a loop: a consumer cancelled again within a second waits with backoff.
    const quick = verdict.resume === 'at-once' && Date.now() - this.lastQuickResume >= QUICK_RESUME_SPACING_MS;
    if (!quick) return this.scheduleResume(verdict.line);
    this.lastQuickResume = Date.now();
    if (verdict.level === 'warn') this.options.logger.warn(verdict.line);
    else this.options.logger.error(verdict.line);
    this.start().catch((error: unknown) => {
      if (this.options.connection.isConnected) this.scheduleResume(`Could not resume consuming "${this.options.queue}": ${errorMessage(error)}`);
    });
  }

  private down(reason: string): void {
    if (this.options.observers?.active) this.options.observers.emit('consumerDown', { queue: this.options.queue, reason });
  }

  private scheduleResume(why: string): void {
    if (this.stopped || this.resumeTimer) return;
    const delay = reconnectDelay(++this.resumeAttempt, this.options.resume);
    this.options.logger.error(`${why}; declaring it again and resuming in ${delay} ms`);
    this.resumeTimer = startTimer(delay, () => {
      this.resumeTimer = undefined;
      this.options
        .redeclare()
        .then(() => this.start())
        .catch((error: unknown) => {
          if (this.options.connection.isConnected) this.scheduleResume(`Could not resume consuming "${this.options.queue}": ${errorMessage(error)}`);
        });
    });
  }
}

/** One delivery and how it is settled: on the channel that delivered it, through its batcher. */
class Delivery implements Settle {
  readonly at = Date.now();
  /** Settled once: a second settlement of a delivery tag would make the broker close the channel. */
  private settled = false;

  constructor(
    readonly message: ConsumeMessage,
    private readonly batcher: AckBatcher,
  ) {}

  ack(): void {
    if (this.settled) return;
    this.settled = true;
    this.batcher.ack(this.message);
  }

  nack(requeue: boolean): void {
    if (this.settled) return;
    this.settled = true;
    this.batcher.nack(this.message, requeue);
  }

  /** Gives the delivery back to the broker before its handler is done (its handler's settlement then counts for nothing). */
  giveBack(): void {
    this.nack(true);
  }
}

/** Tells the handlers of a subscription that their deliveries are lost or abandoned, and frees their exclusivity. */
function abort(subscription: Subscription, reason: string): void {
  if (subscription.abort.signal.aborted) return;
  subscription.abort.abort(new Error(reason));
  for (const pass of subscription.passes) pass.detach();
}
