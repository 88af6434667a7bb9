import type { ConsumeMessage } from 'amqplib';
import { type DurationTimer, startTimer, withinTime } from '../core/time/duration.timer.js';
import { classifyConsumerLoss, type ConsumerLossVerdict } from '../core/connection/consumer-loss.classifier.js';
import {
  type ConsumerEffect,
  type ConsumerState,
  type ConsumerStateEvent,
  INITIAL_CONSUMER_STATE,
  isFinishing,
  transition,
  type WindDown,
} from '../core/consumer/consumer.state.js';
import { consumerPrefetch, paceAfterDelivery } from '../core/consumer/suspect.pace.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { reconnectDelay } from '../core/connection/reconnect.policy.js';
import type { QueueConsumerOptions } from './queue-consumer.options.js';
import { ConsumerDeliveries, type DeliveryHandler } from './consumer.deliveries.js';
import { DeliveryRecalled } from '../core/delivery/delivery.recall.js';
import { abortSubscription, closeSubscription, lossOf, retireSubscription, Subscription } from './consumer.subscription.js';
import { queueStillOurs } from './queue-exists.probe.js';

export type { Settle } from './consumer.subscription.js';
export type { DeliveryHandler } from './consumer.deliveries.js';
export type { QueueConsumerOptions } from './queue-consumer.options.js';

const ignore = (): undefined => undefined;

/** How long a hand-over waits for its note to be sent (QueueConsumerOptions.handingOver) before its channel closes anyway. */
export const ANNOUNCE_TIMEOUT_MS = 1_000;

/**
 * One consumer on one queue, on a channel of its own: prefetch, deliveries in flight, graceful stop, resumption. Its
 * states are the pure state machine of core/consumer/consumer.state.ts; this class feeds it events and carries out
 * its effects on the channel.
 *
 * The channel can die with the connection (whose recovery calls `start()` again) or alone (closed by the broker, or
 * its consumer cancelled): then it declares the topology again and resumes, with backoff. Deliveries of a dead
 * channel are never settled on another one (acks are valid only on the channel that delivered): the broker
 * redelivers them. Their handlers are told through their AbortSignal, and count toward `prefetch` until they return.
 */
export class QueueConsumer {
  private state: ConsumerState;
  private subscription?: Subscription;
  private starting?: Promise<void>;
  /** Re-subscriptions (a change of pace), in turn. */
  private switching: Promise<void> = Promise.resolve();
  private finishing?: Promise<void>;
  private resumeTimer?: DurationTimer;
  private readonly deliveries: ConsumerDeliveries;

  constructor(
    private readonly options: QueueConsumerOptions,
    handle: DeliveryHandler,
  ) {
    this.deliveries = new ConsumerDeliveries(options.prefetch, options.queue, options.logger, handle, options.returned, options.waitsAside);
    this.state = { ...INITIAL_CONSUMER_STATE, handOverMs: options.handOverMs };
  }

  get queue(): string {
    return this.options.queue;
  }

  /** Deliveries taken and not yet settled (handlers running or waiting for the gate): the page's "in flight". */
  get inFlightCount(): number {
    return this.deliveries.count;
  }

  /** True while a channel consumes the queue. */
  get isConsuming(): boolean {
    return this.subscription?.consumerTag !== undefined;
  }

  /** True while held by hold(): not consuming on purpose. */
  get isHeld(): boolean {
    return this.state.held;
  }

  /** The prefetch in force: 1 while subscribed carefully (a suspect came), else the pace set by release(), else the configured one. */
  get prefetch(): number {
    return consumerPrefetch(this.subscription?.subscribedCareful ?? false, this.state.pace, this.options.prefetch);
  }

  /** The state machine's phase (for tests and diagnostics). */
  get phase(): ConsumerState['phase'] {
    return this.state.phase;
  }

  /**
   * Stops taking deliveries (basic.cancel), across reconnections, until release(); deliveries in flight settle on the
   * open channel. The cancel goes out before any later settlement, which could otherwise make room for one more delivery.
   * A single-active-consumer queue (`handOverMs`) is handed over instead, as handOver() does, and its consumer held on a
   * fresh channel.
   */
  hold(reason: string): void {
    void this.dispatch({ type: 'hold', reason });
  }

  /** Consumes again after hold(), at `prefetch` (a new prefetch needs a new subscription: it applies to consumers subscribed after it). */
  release(prefetch: number = this.options.prefetch): void {
    void this.dispatch({ type: 'release', prefetch, configured: this.options.prefetch });
  }

  /** Opens a channel and consumes; does nothing while one is open or opening, or after stop(). */
  start(): Promise<void> {
    void this.dispatch({ type: 'start' });
    return this.starting ?? Promise.resolve();
  }

  /**
   * Stops taking deliveries, lets those in flight settle for up to `timeoutMs`, then closes the channel; handlers still
   * running are told through their signal, and the broker requeues their messages. A single-active-consumer queue
   * (`handOverMs`) is handed over, as handOver() does.
   */
  stop(timeoutMs: number): Promise<void> {
    void this.dispatch({ type: 'stop', timeoutMs });
    return this.finishing ?? Promise.resolve();
  }

  /**
   * Gives the queue up to another consumer (a partition moving) without two ever handling its messages at once: the
   * subscription stays, so a single-active-consumer queue delivers nowhere else; the deliveries are recalled at once
   * (Subscription.recall), so those waiting give up unsettled and none starts; running handlers go on, their signal
   * untouched, and settle for up to `timeoutMs`; then the channel closes without a cancel, so the broker requeues the
   * rest in place before it activates the next consumer. Finished afterwards.
   */
  handOver(timeoutMs: number): Promise<void> {
    void this.dispatch({ type: 'hand-over', timeoutMs });
    return this.finishing ?? Promise.resolve();
  }

  /** Moves the state machine and carries out its effects in order; `subscription`: the channel the event is about. */
  private dispatch(event: ConsumerStateEvent, subscription = this.subscription): Promise<void> | undefined {
    const { state, effects, illegal } = transition(this.state, event);
    if (illegal) return void this.options.logger.debug(`"${this.options.queue}": ${illegal}; ignored`);
    this.state = state;
    return this.carryOut(effects, 0, subscription);
  }

  private carryOut(effects: readonly ConsumerEffect[], from: number, subscription: Subscription | undefined): Promise<void> | undefined {
    for (let i = from; i < effects.length; i++) {
      const pending = this.effect(effects[i], subscription);
      if (pending && i + 1 < effects.length) return pending.then(() => this.carryOut(effects, i + 1, subscription));
      if (pending) return pending;
    }
    return undefined;
  }

  private effect(effect: ConsumerEffect, subscription: Subscription | undefined): Promise<void> | undefined {
    switch (effect.type) {
      case 'open-channel':
        this.starting = this.open().finally(() => (this.starting = undefined));
        return undefined;
      case 'close-channel':
        return subscription?.channel.close().then(ignore, ignore);
      case 'subscribe':
        return subscription && this.subscribe(subscription);
      case 'cancel-consumer':
        return this.cancelConsumer(subscription, effect.downReason);
      case 'resubscribe':
        return void this.resubscribe(subscription);
      case 'announce-up':
        if (this.options.observers?.active) this.options.observers.emit('consumerUp', { queue: this.options.queue });
        return undefined;
      case 'announce-down':
        return void this.down(effect.reason);
      case 'resume-now':
        if (effect.level === 'warn') this.options.logger.warn(effect.why);
        else this.options.logger.error(effect.why);
        this.start().catch((error: unknown) => this.resumeFailed(error));
        return undefined;
      case 'schedule-resume':
        return void this.scheduleResume(effect.attempt, effect.why);
      case 'redeclare-and-start':
        this.options
          .redeclare()
          .then(() => this.start())
          .catch((error: unknown) => this.resumeFailed(error));
        return undefined;
      case 'cancel-resume':
        this.resumeTimer?.cancel();
        this.resumeTimer = undefined;
        return undefined;
      case 'wind-down':
        this.finishing = this.windDown(effect);
        return undefined;
    }
  }

  private async open(): Promise<void> {
    const { connection, queue } = this.options;
    let subscription: Subscription;
    try {
      const channel = await connection.createChannel(`queue "${queue}"`, true); // its loss is logged here, once, with its cause
      subscription = new Subscription(channel, this.options.isSuspect !== undefined, (s, error) => this.dropped(s, error));
    } catch (error) {
      void this.dispatch({ type: 'open-failed' });
      throw error;
    }
    // The broker closing this channel alone sends a reason first ('error'); a dying connection closes it silently.
    let brokerReason: string | undefined;
    subscription.channel.on('error', (error: Error) => (brokerReason = error.message));
    subscription.channel.on('close', () => this.onChannelClosed(subscription, brokerReason));
    if (!isFinishing(this.state.phase) && this.state.phase !== 'yielding') this.subscription = subscription;
    await this.dispatch({ type: 'opened' }, subscription);
  }

  private async subscribe(subscription: Subscription): Promise<void> {
    const { channel, careful } = subscription;
    subscription.subscribedCareful = careful;
    await channel.prefetch(consumerPrefetch(careful, this.state.pace, this.options.prefetch));
    const { consumerTag } = await channel.consume(this.options.queue, (message) => this.track(subscription, message, careful), { noAck: false });
    subscription.consumerTag = consumerTag;
    if (this.subscription === subscription) await this.dispatch({ type: 'subscribed' }, subscription);
  }

  /** basic.cancel, sent at once, before anything that follows; the channel stays. */
  private cancelConsumer(subscription: Subscription | undefined, downReason?: string): Promise<void> | undefined {
    const tag = subscription?.consumerTag;
    if (!subscription || tag === undefined) return undefined;
    subscription.consumerTag = undefined;
    const cancelled = subscription.channel.cancel(tag).then(ignore, ignore); // a dead channel has no consumer left either
    if (downReason !== undefined) this.down(downReason);
    return cancelled;
  }

  /** Subscribes again at the current pace, after a start in progress; `unlessCareful`: unless already at that pace. */
  private resubscribe(subscription: Subscription | undefined, unlessCareful?: boolean): void {
    this.switching = this.switching.then(async () => {
      await this.starting?.catch(ignore);
      const current = subscription ?? this.subscription;
      const wanted = (): boolean => this.subscription === current && this.state.phase === 'consuming';
      if (!current || !wanted() || (unlessCareful !== undefined && current.subscribedCareful === unlessCareful)) return;
      try {
        // The cancel goes out before the acks of the deliveries that made the channel idle (they wait for the turn's
        // end): while they are unacked, a careful consumer (prefetch 1) cannot be sent one more delivery before it.
        const tag = current.consumerTag;
        current.consumerTag = undefined;
        if (tag !== undefined) await current.channel.cancel(tag);
        if (wanted()) await this.subscribe(current);
      } catch {
        // the channel died meanwhile: its close handler takes over
      }
    });
  }

  /** The stop sequence of stop() and handOver(); the state machine's plan holds their differences. */
  private async windDown(plan: WindDown): Promise<void> {
    // A hand-over: deliveries not started give up, unsettled (the channel's close returns them); handlers run on.
    if (plan.recall !== undefined) this.subscription?.recall.abort(new DeliveryRecalled(this.options.queue, plan.recall));
    await this.starting?.catch(ignore);
    await this.switching; // a change of pace in progress must not subscribe again behind our back
    const subscription = this.subscription;
    if (plan.cancelFirst && subscription?.consumerTag !== undefined) {
      await this.cancelConsumer(subscription);
      this.down(plan.downReason); // once the broker has answered the cancel
    }
    if (await this.deliveries.idleWithin(plan.timeoutMs)) {
      this.options.logger.warn(
        `"${this.options.queue}": ${this.deliveries.count} handler(s) still running after ${plan.timeoutMs} ms${plan.lateSuffix}; closing, their messages will be redelivered`,
      );
      if (subscription) abortSubscription(subscription, `the shutdown timeout (${plan.timeoutMs} ms) has passed`);
    }
    if (subscription) {
      if (subscription.consumerTag !== undefined) this.down(plan.downReason);
      if (this.subscription === subscription) this.subscription = undefined;
      const handingOver = plan.recall !== undefined ? this.options.handingOver : undefined;
      if (handingOver) await this.announce(handingOver);
      await closeSubscription(subscription);
      if (handingOver) await this.announce(handingOver);
    }
    void this.dispatch({ type: 'drained' });
  }

  /**
   * Tells of a hand-over's returns on purpose (QueueConsumerOptions.handingOver), for ANNOUNCE_TIMEOUT_MS at most: a
   * failure or a timeout is logged, and the hand-over goes on (those returns are then counted).
   */
  private announce(handingOver: () => Promise<void>): Promise<void> {
    const timedOut = () => new Error(`no confirm within ${ANNOUNCE_TIMEOUT_MS} ms`);
    return withinTime(handingOver(), ANNOUNCE_TIMEOUT_MS, timedOut).catch((error: unknown) =>
      this.options.logger.warn(
        `"${this.options.queue}": the next consumer could not be told which returns were made on purpose: ${errorMessage(error)}`,
      ),
    );
  }

  /** `carefully`: delivered by a consumer at prefetch 1, whose deliveries tell whether the suspects are through. */
  private track(subscription: Subscription, message: ConsumeMessage | null, carefully: boolean): void {
    if (message === null) return this.onCancelled(subscription);
    const { phase } = this.state;
    // The channel's close requeues it; held unhandled meanwhile, so that no multiple ack covers it.
    if (phase === 'handing-over' || phase === 'yielding') {
      this.options.returned?.(message);
      return subscription.batcher.delivered({ message, ready: false });
    }
    const delivery = this.deliveries.take(subscription, message); // first: a delivery not taken could be covered by a multiple ack
    const suspect = this.suspect(message);
    // After counting it: the change of pace waits until the channel holds no delivery, this one included.
    const careful = paceAfterDelivery(suspect, subscription.careful, carefully);
    if (careful !== undefined && !isFinishing(phase)) this.changePace(subscription, careful);
    this.deliveries.admit(subscription, delivery, suspect);
  }

  /** Whether a delivery may crash its handler's process; one that cannot be told is treated as one that may. */
  private suspect(message: ConsumeMessage): boolean {
    try {
      return this.options.isSuspect?.(message) ?? false;
    } catch {
      return true;
    }
  }

  /**
   * Re-subscribes at prefetch 1 (a suspect came) or full prefetch (suspects through) once the channel holds no
   * delivery: a consumer cancelled while holding deliveries cannot be told of a consumer timeout (RabbitMQ 4.3 then
   * closes the channel and still delivers on it, costing amqplib the connection). Meanwhile the gate keeps a suspect alone.
   */
  private changePace(subscription: Subscription, careful: boolean): void {
    subscription.careful = careful;
    if (subscription.paceSwitchPending) return; // the pending switch reads `careful` when it runs
    subscription.paceSwitchPending = true;
    const whenIdle = (): void => {
      if (subscription.unsettled > 0) return void subscription.idle.push(whenIdle);
      subscription.paceSwitchPending = false;
      this.resubscribe(subscription, subscription.careful);
    };
    whenIdle();
  }

  /** A settlement on a closed channel: expected (and already told) when the channel's deliveries were lost. */
  private dropped(subscription: Subscription, error: unknown): void {
    const line = `Dropped a settlement for "${this.options.queue}" on a closed channel (${errorMessage(error)}); the broker redelivers the message`;
    if (subscription.abort.signal.aborted) this.options.logger.debug(line);
    else this.options.logger.warn(line);
  }

  private onChannelClosed(subscription: Subscription, brokerReason: string | undefined): void {
    const verdict = classifyConsumerLoss({ ...lossOf(subscription, this.options.queue, 'channel-closed'), brokerReason });
    abortSubscription(subscription, `the channel consuming "${this.options.queue}" closed${brokerReason ? ` (${brokerReason})` : ''}`);
    if (this.subscription !== subscription) return;
    this.subscription = undefined;
    void this.dispatch({ type: 'lost', reason: brokerReason ?? 'the connection closed' });
    this.resumeAfter(verdict); // after a lost connection, its recovery restarts us
  }

  /**
   * The broker cancelled the consumer: the queue was deleted, or (RabbitMQ 4.3, quorum) a consumer timeout took the
   * unsettled deliveries back. The channel is retired with a `basic.cancel` of our own (4.3 keeps a timed-out consumer
   * and cancels it again later, which amqplib would not know); a fresh channel takes over.
   */
  private onCancelled(subscription: Subscription): void {
    if (this.subscription !== subscription) return;
    this.subscription = undefined;
    const tag = subscription.consumerTag;
    subscription.consumerTag = undefined;
    void this.dispatch({ type: 'lost', reason: 'the broker cancelled the consumer' });
    const loss = lossOf(subscription, this.options.queue, 'cancelled');
    if (loss.unsettled > 0)
      abortSubscription(subscription, `the broker cancelled the consumer of "${this.options.queue}" and took its deliveries back`);
    void retireSubscription(subscription, tag);
    const { connection, queue, queueArguments } = this.options;
    const open = () => connection.createChannel(`queue "${queue}" check`, true);
    void queueStillOurs(open, queue, queueArguments)
      .catch(ignore)
      .then((q) => this.resumeAfter(classifyConsumerLoss({ ...loss, queueExists: q?.exists, queueMatches: q?.matches })));
  }

  /** The state machine logs the verdict's line and resumes at once, with backoff, or not. */
  private resumeAfter(verdict: ConsumerLossVerdict): void {
    void this.dispatch({ type: 'loss-verdict', resume: verdict.resume, now: Date.now(), why: verdict.line, level: verdict.level });
  }

  private resumeFailed(error: unknown): void {
    if (!this.options.connection.isConnected) return; // the connection's recovery restarts us
    void this.dispatch({ type: 'resume-failed', why: `Could not resume consuming "${this.options.queue}": ${errorMessage(error)}` });
  }

  private scheduleResume(attempt: number, why: string): void {
    const delay = reconnectDelay(attempt, this.options.resume);
    this.options.logger.error(`${why}; declaring it again and resuming in ${delay} ms`);
    this.resumeTimer = startTimer(delay, () => {
      this.resumeTimer = undefined;
      void this.dispatch({ type: 'resume-due' });
    });
  }

  private down(reason: string): void {
    if (this.options.observers?.active) this.options.observers.emit('consumerDown', { queue: this.options.queue, reason });
  }
}
