import { setMaxListeners } from 'node:events';
import type { Channel, ConsumeMessage } from 'amqplib';
import type { GatePass } from '../core/delivery/delivery.gate.js';
import type { ConsumerLossEvent } from '../core/connection/consumer-loss.classifier.js';
import { linkRecall } from '../core/delivery/delivery.recall.js';
import { AckBatcher, type Unsettled } from './ack.batcher.js';

/** Settles one delivery on the channel that delivered it. */
export interface Settle {
  ack(): void;
  /** `requeue: false` dead-letters the message (the retry path); `true` puts it back in the queue. */
  nack(requeue: boolean): void;
}

/** One channel's life: what it delivered and settles, and a signal that aborts when it is gone. */
export class Subscription {
  readonly batcher: AckBatcher;
  readonly abort = new AbortController();
  /** Aborts with `abort`, and when the queue is handed over: its deliveries not in a handler call give up (linkRecall). */
  readonly recall = new AbortController();
  /** Its deliveries not settled yet (running or waiting for the gate); `idle` wakes those waiting for none. */
  unsettled = 0;
  /** Its deliveries not settled yet, with when each was delivered (for a consumer timeout's log line). */
  readonly held = new HeldDeliveries();
  readonly idle: Array<() => void> = [];
  consumerTag?: string;
  /** The pace of the consumer subscribed now, and whether a change waits for the channel to hold no delivery. */
  subscribedCareful?: boolean;
  paceSwitchPending?: boolean;

  /**
   * `careful`: prefetch 1 while suspects are about (quorum), so that a crash finds only the suspect unsettled.
   * `dropped` hears of settlements a closed channel could not take.
   */
  constructor(
    readonly channel: Channel,
    public careful: boolean,
    dropped: (subscription: Subscription, error: unknown) => void,
  ) {
    // Every delivery's handler listens to these signals: up to `prefetch` listeners is no leak.
    setMaxListeners(0, this.abort.signal, this.recall.signal);
    linkRecall(this.abort.signal, this.recall.signal);
    this.batcher = new AckBatcher(channel, (error) => dropped(this, error));
  }
}

/** One delivery, settled on the channel that delivered it. */
export class Delivery implements Settle, Unsettled {
  readonly at = Date.now();
  /** Acked by its handler, the ack not sent yet (the batcher's flag). */
  ready = false;
  /** Its place in the gate while its handler runs. */
  pass?: GatePass;
  /** Its links in its subscription's HeldDeliveries. */
  previous?: Delivery;
  next?: Delivery;
  listed = false;
  /** Settled once: a second settlement of a delivery tag would make the broker close the channel. */
  private settled = false;

  constructor(
    readonly message: ConsumeMessage,
    private readonly batcher: AckBatcher,
  ) {}

  /** Acked or nacked already (the ack may still wait for the batcher's flush). */
  get isSettled(): boolean {
    return this.settled;
  }

  ack(): void {
    if (this.settled) return;
    this.settled = true;
    this.batcher.ack(this);
  }

  nack(requeue: boolean): void {
    if (this.settled) return;
    this.settled = true;
    this.batcher.nack(this, requeue);
  }

  /** Gives the delivery back before its handler is done (whose settlement then counts for nothing). */
  giveBack(): void {
    this.nack(true);
  }
}

/** Tells the handlers of a subscription that their deliveries are lost or abandoned, and frees their exclusivity. */
export function abortSubscription(subscription: Subscription, reason: string): void {
  if (subscription.abort.signal.aborted) return;
  const error = new Error(reason);
  subscription.abort.abort(error);
  subscription.recall.abort(error);
  for (const delivery of subscription.held) delivery.pass?.detach(); // the gate passes of its handlers running now
}

/** What a subscription knows of a loss of its deliveries, for classifyConsumerLoss. */
export function lossOf(subscription: Subscription, queue: string, event: ConsumerLossEvent['event']): ConsumerLossEvent {
  let oldest: number | undefined;
  for (const delivery of subscription.held) oldest = Math.min(oldest ?? delivery.at, delivery.at);
  const oldestHeldMs = oldest === undefined ? undefined : Date.now() - oldest;
  return { event, queue, unsettled: subscription.unsettled, oldestHeldMs };
}

/** Sends the acks waiting and closes the channel (the broker requeues what it did not settle). */
export async function closeSubscription(subscription: Subscription): Promise<void> {
  subscription.batcher.flush();
  await subscription.channel.close().catch(() => undefined);
}

/**
 * Retires a channel whose consumer the broker cancelled: our own `basic.cancel`, then its deliveries given back and
 * the channel closed. Left unsettled, they would trip the channel's own consumer-timeout check (RabbitMQ 4.3), which
 * closes the channel while the queue still delivers on it: amqplib then drops the whole connection.
 */
export async function retireSubscription(subscription: Subscription, tag: string | undefined): Promise<void> {
  if (tag) await subscription.channel.cancel(tag).catch(() => undefined);
  for (const delivery of subscription.held) delivery.giveBack();
  await closeSubscription(subscription);
}

/**
 * A channel's deliveries not finished yet (running or waiting for the gate), in arrival order: a list through the
 * deliveries themselves rather than a Set, which would hash each one (a busy consumer's costliest step per message).
 */
export class HeldDeliveries implements Iterable<Delivery> {
  private first?: Delivery;
  private last?: Delivery;

  add(delivery: Delivery): void {
    if (delivery.listed) return;
    delivery.listed = true;
    delivery.previous = this.last;
    delivery.next = undefined;
    if (this.last) this.last.next = delivery;
    else this.first = delivery;
    this.last = delivery;
  }

  delete(delivery: Delivery): void {
    if (!delivery.listed) return;
    delivery.listed = false;
    if (delivery.previous) delivery.previous.next = delivery.next;
    else this.first = delivery.next;
    if (delivery.next) delivery.next.previous = delivery.previous;
    else this.last = delivery.previous;
    delivery.previous = delivery.next = undefined;
  }

  /** Each delivery held when the walk begins, oldest first (the rare walks: a lost channel, a stop, a log line). */
  [Symbol.iterator](): Iterator<Delivery> {
    const all: Delivery[] = [];
    for (let delivery = this.first; delivery !== undefined; delivery = delivery.next) all.push(delivery);
    return all[Symbol.iterator]();
  }
}
