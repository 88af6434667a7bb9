import type { ConsumeMessage } from 'amqplib';
import { DeliveryGate, type GatePass, linkPass } from '../core/delivery/delivery.gate.js';
import { startTimer, withinTime } from '../core/time/duration.timer.js';
import { errorMessage } from '../core/text/error-message.format.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { returnedOnPurpose } from '../core/delivery/hand-over.note.js';
import { Delivery, type Settle, type Subscription } from './consumer.subscription.js';

/** Handles and settles one delivery; `signal` aborts when it can no longer be settled or the shutdown timeout has passed. */
export type DeliveryHandler = (message: ConsumeMessage, settle: Settle, signal: AbortSignal) => Promise<void>;

/** How long a delivery whose handler failed without settling it is held before it is put back in the queue. */
export const GIVE_BACK_AFTER_MS = 1_000;

/**
 * A consumer's deliveries across its channels, each run in its place in the gate. The gate outlives channels: handlers
 * of a dead channel run on (their settlements dropped) and still count toward `prefetch`.
 */
export class ConsumerDeliveries {
  private readonly gate: DeliveryGate;
  /** Handlers running or waiting for the gate; `idle` wakes those waiting for none. */
  private running = 0;
  private readonly idle: Array<() => void> = [];

  constructor(
    prefetch: number,
    private readonly queue: string,
    private readonly logger: RetryLogger,
    private readonly handle: DeliveryHandler,
    /** Told of a delivery whose handler ended unsettled once recalled (a hand-over): the channel's close gives it back. */
    private readonly returned?: (message: ConsumeMessage) => void,
    /** Whether the handler may wait aside from the gate: only then is a delivery's pass linked to its message. */
    private readonly waitsAside = false,
  ) {
    this.gate = new DeliveryGate(prefetch);
  }

  /** Deliveries taken and not yet settled. */
  get count(): number {
    return this.running;
  }

  /** Counts a delivery of `subscription` as unsettled, on the channel and overall. */
  take(subscription: Subscription, message: ConsumeMessage): Delivery {
    this.running++;
    subscription.unsettled++;
    const delivery = new Delivery(message, subscription.batcher);
    subscription.batcher.delivered(delivery);
    subscription.held.add(delivery);
    return delivery;
  }

  /** Runs a delivery taken: at once if the gate admits it (without a promise), else once it does. */
  admit(subscription: Subscription, delivery: Delivery, exclusive: boolean): void {
    const pass = this.gate.tryEnter(exclusive);
    if (pass) this.begin(subscription, delivery, pass);
    else void this.gate.enter(exclusive).then((later) => this.begin(subscription, delivery, later));
  }

  /** Waits until no handler runs, at most `timeoutMs`; true when the time ran out first. */
  idleWithin(timeoutMs: number): Promise<boolean> {
    const idle = this.running === 0 ? Promise.resolve() : new Promise<void>((resolve) => this.idle.push(resolve));
    return withinTime(idle, timeoutMs, () => new Error('handlers still running')).then(
      () => false,
      () => true,
    );
  }

  /** A delivery whose channel died (or whose queue is handed over) while it waited is not handled: the broker redelivers it. */
  private begin(subscription: Subscription, delivery: Delivery, pass: GatePass): void {
    if (!subscription.recall.signal.aborted) return this.run(subscription, delivery, pass);
    this.ended(subscription, delivery, pass);
  }

  /**
   * A delivery's handler returned (or never started): one left unsettled after its queue was recalled waited (for its
   * turn, its key, an attempt in place) and goes back with the channel's close, on purpose (returnedOnPurpose).
   */
  private ended(subscription: Subscription, delivery: Delivery, pass: GatePass): void {
    // The usual delivery is settled by its handler: nothing to weigh, nothing allocated.
    if (!delivery.isSettled) {
      const end = { recalled: subscription.recall.signal.aborted, lost: subscription.abort.signal.aborted, running: false };
      if (returnedOnPurpose(end)) this.returned?.(delivery.message);
    }
    this.finish(subscription, delivery, pass);
  }

  /** Runs one delivery's handler; never throws, never rejects. */
  private run(subscription: Subscription, delivery: Delivery, pass: GatePass): void {
    delivery.pass = pass;
    if (this.waitsAside) linkPass(delivery.message, pass);
    let running: Promise<void>;
    try {
      running = this.handle(delivery.message, delivery, subscription.abort.signal);
    } catch (error) {
      running = Promise.reject(error);
    }
    // Promise.resolve: a handler from JavaScript that returns a plain value must still finish, not throw here.
    Promise.resolve(running).then(
      () => this.ended(subscription, delivery, pass),
      (error: unknown) => {
        const unsettled = !delivery.isSettled && !subscription.abort.signal.aborted;
        const next = unsettled ? `; it goes back to the queue in ${GIVE_BACK_AFTER_MS} ms` : '';
        this.logger.error(`Unexpected failure handling a message from "${this.queue}": ${errorMessage(error)}${next}`);
        if (unsettled) this.giveBackLater(subscription, delivery, pass);
        else this.finish(subscription, delivery, pass);
      },
    );
  }

  /**
   * A delivery whose handler failed without settling it: held (its place and counts kept, so no change of pace cancels
   * the consumer while the broker holds it) and then put back, after a pause so that a failure on every delivery is no
   * hot loop. A channel lost meanwhile returns it itself.
   */
  private giveBackLater(subscription: Subscription, delivery: Delivery, pass: GatePass): void {
    const signal = subscription.abort.signal;
    const done = (giveBack: boolean): void => {
      timer.cancel();
      signal.removeEventListener('abort', lost);
      if (giveBack) delivery.giveBack();
      this.finish(subscription, delivery, pass);
    };
    const lost = (): void => done(false);
    const timer = startTimer(GIVE_BACK_AFTER_MS, () => done(true));
    signal.addEventListener('abort', lost, { once: true });
  }

  /** A delivery's handler returned (or its channel died while it waited): its place and counts are free. */
  private finish(subscription: Subscription, delivery: Delivery, pass: GatePass): void {
    subscription.held.delete(delivery);
    delivery.pass = undefined;
    pass.leave();
    if (--subscription.unsettled === 0) for (const wake of subscription.idle.splice(0)) wake();
    if (--this.running === 0) for (const wake of this.idle.splice(0)) wake();
  }
}
