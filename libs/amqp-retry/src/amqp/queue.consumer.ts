import { setMaxListeners } from 'node:events';
import type { Channel, ConsumeMessage } from 'amqplib';
import { DeliveryGate, type GatePass } from '../core/delivery.gate.js';
import { type DurationTimer, startTimer } from '../core/duration.timer.js';
import { errorMessage } from '../core/error-message.js';
import { reconnectDelay, type ReconnectPolicy } from '../core/reconnect.policy.js';
import type { RetryLogger } from '../core/retry-logger.js';
import type { ObserverHub } from '../observability/observer-hub.js';
import { AckBatcher } from './ack.batcher.js';
import type { AmqpConnection } from './amqp-connection.js';

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
  idle: Array<() => void>;
  consumerTag?: string;
  /** Prefetch 1 while suspects are about (quorum): a crash then finds only the suspect unsettled. */
  careful: boolean;
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
  private resumeAttempt = 0;
  private resumeTimer?: DurationTimer;
  private readonly gate: DeliveryGate;
  /** Handlers running or waiting for the gate, across channels; `idle` wakes those waiting for them to finish. */
  private inFlight = 0;
  private readonly idle: Array<() => void> = [];

  constructor(
    private readonly options: QueueConsumerOptions,
    private readonly handle: DeliveryHandler,
  ) {
    this.gate = new DeliveryGate(options.prefetch);
  }

  get queue(): string {
    return this.options.queue;
  }

  /** True while a channel consumes the queue. */
  get isConsuming(): boolean {
    return this.subscription?.consumerTag !== undefined;
  }

  /** Opens a channel and consumes; does nothing while one is open or opening, or after stop(). */
  start(): Promise<void> {
    if (this.stopped || this.subscription) return Promise.resolve();
    this.starting ??= this.open().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async open(): Promise<void> {
    const { connection, queue } = this.options;
    const channel = await connection.createChannel(`queue "${queue}"`);
    const abort = new AbortController();
    // One signal is shared by every delivery of the channel, and handlers (and the parker) listen to it: up to
    // `prefetch` listeners is normal, not the leak Node warns about past 10.
    setMaxListeners(0, abort.signal);
    const subscription: Subscription = {
      channel,
      batcher: new AckBatcher(channel, (error) => this.dropped(error)),
      abort,
      passes: new Set(),
      unsettled: 0,
      idle: [],
      careful: this.options.isSuspect !== undefined,
    };
    // The broker closing this channel alone sends a reason first ('error'); a dying connection closes it silently.
    let brokerReason: string | undefined;
    channel.on('error', (error: Error) => (brokerReason = error.message));
    channel.on('close', () => this.onChannelClosed(subscription, brokerReason));
    if (this.stopped) return void (await channel.close().catch(() => undefined));
    this.subscription = subscription;
    await this.subscribe(subscription);
    if (this.stopped) return this.closeChannel(subscription); // stop() ran meanwhile: leave no orphan consumer
    this.resumeAttempt = 0;
  }

  private async subscribe(subscription: Subscription): Promise<void> {
    const { channel, careful } = subscription;
    await channel.prefetch(careful ? 1 : this.options.prefetch);
    const { consumerTag } = await channel.consume(this.options.queue, (message) => this.track(subscription, message, careful), { noAck: false });
    subscription.consumerTag = consumerTag;
    if (this.stopped) return void (await channel.cancel(consumerTag).catch(() => undefined)); // stop() came while we subscribed
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
    let timer: DurationTimer | undefined;
    const timedOut = await Promise.race([
      this.whenIdle().then(() => false),
      new Promise<boolean>((resolve) => (timer = startTimer(timeoutMs, () => resolve(true)))),
    ]);
    timer?.cancel();
    if (timedOut) {
      this.options.logger.warn(
        `"${this.options.queue}": ${this.inFlight} handler(s) still running after ${timeoutMs} ms; closing, their messages will be redelivered`,
      );
      if (subscription) abort(subscription, `the shutdown timeout (${timeoutMs} ms) has passed`);
    }
    if (subscription) await this.closeChannel(subscription);
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
    const suspect = this.options.isSuspect?.(message) ?? false;
    if (!this.stopped && (suspect ? !subscription.careful : subscription.careful && carefully)) this.changePace(subscription, suspect);
    this.inFlight++;
    subscription.unsettled++;
    const delivery = new Delivery(message, subscription.batcher);
    // The usual case runs at once, without a promise of its own: this is every message's path.
    const pass = this.gate.tryEnter(suspect);
    if (pass) this.begin(subscription, delivery, pass);
    else void this.gate.enter(suspect).then((later) => this.begin(subscription, delivery, later));
  }

  /** A delivery whose channel died while it waited is not handled: the broker redelivers it. */
  private begin(subscription: Subscription, delivery: Delivery, pass: GatePass): void {
    if (subscription.abort.signal.aborted) this.finish(subscription, pass);
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
      () => this.finish(subscription, pass),
      (error: unknown) => {
        this.options.logger.error(`Unexpected failure handling a message from "${this.options.queue}": ${errorMessage(error)}`);
        this.finish(subscription, pass);
      },
    );
  }

  /** A delivery's handler returned (or its channel died while it waited for the gate): its place and counts are free. */
  private finish(subscription: Subscription, pass: GatePass): void {
    subscription.passes.delete(pass);
    pass.leave();
    if (--subscription.unsettled === 0) for (const wake of subscription.idle.splice(0)) wake();
    if (--this.inFlight === 0) for (const wake of this.idle.splice(0)) wake();
  }

  /** Resolves once no handler runs or waits. */
  private whenIdle(): Promise<void> {
    return this.inFlight === 0 ? Promise.resolve() : new Promise((resolve) => this.idle.push(resolve));
  }

  /** Re-subscribes at prefetch 1 (a suspect came) or at full prefetch (the suspects are through). */
  private changePace(subscription: Subscription, careful: boolean): void {
    subscription.careful = careful;
    this.switching = this.switching.then(async () => {
      if (this.subscription !== subscription || this.stopped || subscription.careful !== careful) return;
      try {
        if (subscription.consumerTag) await subscription.channel.cancel(subscription.consumerTag);
        subscription.consumerTag = undefined;
        if (this.subscription === subscription && !this.stopped) await this.subscribe(subscription);
      } catch {
        // the channel died meanwhile: its close handler takes over
      }
    });
  }

  private dropped(error: unknown): void {
    this.options.logger.warn(
      `Dropped a settlement for "${this.options.queue}" on a closed channel (${errorMessage(error)}); the broker redelivers the message`,
    );
  }

  private onChannelClosed(subscription: Subscription, brokerReason: string | undefined): void {
    abort(subscription, `the channel consuming "${this.options.queue}" closed${brokerReason ? ` (${brokerReason})` : ''}`);
    if (this.subscription !== subscription) return;
    this.subscription = undefined;
    this.down(brokerReason ?? 'the connection closed');
    if (brokerReason === undefined) return; // it died with the connection, whose recovery restarts us
    this.scheduleResume(`The broker closed the channel consuming "${this.options.queue}" (${brokerReason})`);
  }

  /** The consumer was cancelled by the broker: the old channel settles what it delivered, a new one takes over. */
  private onCancelled(subscription: Subscription): void {
    if (this.subscription !== subscription) return;
    this.subscription = undefined;
    subscription.consumerTag = undefined;
    this.down('the broker cancelled the consumer');
    const idle = subscription.unsettled === 0 ? Promise.resolve() : new Promise<void>((resolve) => subscription.idle.push(resolve));
    void idle.then(() => this.closeChannel(subscription));
    this.scheduleResume(`The broker cancelled the consumer of "${this.options.queue}" (was the queue deleted?)`);
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
  constructor(
    readonly message: ConsumeMessage,
    private readonly batcher: AckBatcher,
  ) {}

  ack(): void {
    this.batcher.ack(this.message);
  }

  nack(requeue: boolean): void {
    this.batcher.nack(this.message, requeue);
  }
}

/** Tells the handlers of a subscription that their deliveries are lost or abandoned, and frees their exclusivity. */
function abort(subscription: Subscription, reason: string): void {
  if (subscription.abort.signal.aborted) return;
  subscription.abort.abort(new Error(reason));
  for (const pass of subscription.passes) pass.detach();
}
