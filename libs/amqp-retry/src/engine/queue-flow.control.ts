import type { ConsumeMessage } from 'amqplib';
import type { DeliveryHandler, Settle } from '../amqp/queue.consumer.js';
import type { Middleware, PolicyOf } from '../pipeline/delivery.contracts.js';
import { CircuitBreakerState, type CircuitTicket, type CircuitTransition } from '../core/breaker/circuit.state.js';
import { countsAsOutage } from '../core/breaker/outage.classify.js';
import { type PauseRecord, type QueueFlowStatus, type QueueState, queueStateOf } from '../core/breaker/queue.state.js';
import { formatDuration } from '../core/time/duration.reader.js';
import { type DurationTimer, startTimer } from '../core/time/duration.timer.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import { RateLimitGate } from './rate-limit.gate.js';
import { OwnReturns, returnIdentity } from '../core/delivery/own-returns.ledger.js';
import { brokerDeliveryCount, carriedCountOf, countedHeaders } from '../core/delivery/delivery.count.js';
import { QUORUM_DELIVERY_LIMIT } from '../core/delivery/delivery.decision.js';
import { handleThen, WaitingDeliveries, waitsBeforeHandler } from './waiting.deliveries.js';

export type { QueueFlowStatus } from '../core/breaker/queue.state.js';

/** What the flow stops and starts: the queue's consumer. */
export interface FlowTarget {
  hold(reason: string): void;
  release(prefetch?: number): void;
  /** The prefetch it consumes at now, if it can tell. */
  readonly prefetch?: number;
}

interface Dependencies {
  logger: RetryLogger;
  observers?: ObserverHub;
  now?: () => number;
  /** Whether the broker keeps a quorum queue's delivery counts through dead-lettering (keepsDeliveryCounts). */
  keepsDeliveryCounts?: () => boolean;
}

/**
 * One handler queue's flow: its circuit breaker, its pause (the operator's kill switch) and its rate limit.
 *
 * Open or paused: the consumer is cancelled, so messages wait in the broker; handlers in flight finish, and every
 * delivery not yet handed to the handler is put back (nack with requeue: no attempt is spent). A single-active-consumer
 * queue is handed over instead (QueueConsumer.hold): its channel closes once the handlers are done, which puts the
 * deliveries back in their places before the next consumer activates. Half-open: the consumer takes `halfOpenCalls`
 * deliveries at a time (its prefetch) and exactly that many reach the handler; one more waits in memory for a trial's
 * place, never in a loop. A failed trial is an ordinary failed attempt: the breaker never parks a
 * message. The state is this process's: each instance counts its own calls and decides alone.
 */
export class QueueFlowControl {
  private readonly breaker?: CircuitBreakerState;
  private readonly limiter?: RateLimitGate;
  /** Admitted deliveries not yet handed to the handler (ordering, idempotency, inbox): taken back when the queue stops. */
  private readonly waiting?: WaitingDeliveries;
  private paused?: PauseRecord;
  private openUntil?: number;
  private timer?: DurationTimer;
  private readonly tickets = new WeakMap<ConsumeMessage, CircuitTicket>();
  /** Deliveries waiting for a trial's place while half-open: woken on every change. */
  private waiters: Array<() => void> = [];
  private target?: FlowTarget;
  private state: QueueState = 'running';
  private stopped = false;
  private readonly now: () => number;

  /** The deliveries put back while paused or open: their quorum queue counts those returns, the decision does not. */
  readonly returns = new OwnReturns();
  /** The deliveries noted in `returns` (noteReturn). */
  private readonly noted = new WeakSet<ConsumeMessage>();

  constructor(
    private readonly config: HandlerConfig,
    private readonly deps: Dependencies,
  ) {
    this.now = deps.now ?? Date.now;
    if (config.circuitBreaker) this.breaker = new CircuitBreakerState(config.circuitBreaker);
    if (config.rateLimit) this.limiter = new RateLimitGate(config.rateLimit, this.now);
    if (waitsBeforeHandler(config)) this.waiting = new WaitingDeliveries(config.queue);
  }

  get queue(): string {
    return this.config.queue;
  }

  /**
   * The consumer's prefetch in force: `halfOpenCalls` while the circuit is half-open, else the configured one, and 1
   * while the consumer isolates a suspect (its own `prefetch`).
   */
  get prefetch(): number {
    const breaker = this.config.circuitBreaker;
    const flow = breaker && this.breaker?.state === 'half-open' ? breaker.halfOpenCalls : this.config.prefetch;
    return Math.min(flow, this.target?.prefetch ?? flow);
  }

  /** The consumer to hold and release; set once it exists, and again for a new one, which starts in the current state. */
  attach(target: FlowTarget): void {
    this.target = target;
    if (this.stopped) return;
    if (this.state === 'paused' || this.state === 'open') target.hold(`the queue is ${this.state}`);
    else if (this.state === 'half-open') target.release(this.config.circuitBreaker?.halfOpenCalls);
  }

  /** The delivery handler behind the flow: without a breaker, a limit or a pause, the handler itself is called. */
  gate(delivery: DeliveryHandler): DeliveryHandler {
    const waiting = this.waiting;
    const handle: DeliveryHandler = waiting ? (message, settle, signal) => waiting.run(delivery, message, settle, signal) : delivery;
    return (message, settle, signal) => {
      if (!this.limiter && !this.paused && !this.stopped) {
        if (!this.breaker) return handle(message, settle, signal);
        // A closed circuit admits at once: the usual delivery with a breaker costs a ticket, not an async frame.
        const ticket = this.breaker.state === 'closed' ? this.breaker.admit() : undefined;
        if (ticket) return this.withTicket(handle, message, settle, signal, ticket);
      }
      return this.pass(handle, message, settle, signal);
    };
  }

  /** The hand-over step: until it, a stop or a hand-over takes the delivery back. Absent when nothing waits before the handler. */
  handOverStep(): Middleware | undefined {
    const waiting = this.waiting;
    return waiting && ((next) => waiting.handing(next));
  }

  /**
   * The hand-over of a delivery settled without its handler (parked before it, a request, a failure before the call):
   * false when a stop took it back already. Absent when nothing waits before the handler.
   */
  handOver(): ((message: ConsumeMessage, signal: AbortSignal) => boolean) | undefined {
    const waiting = this.waiting;
    return waiting && ((message, signal) => waiting.handOver(message, signal));
  }

  /** The breaker step: counts the call's outcome into the breaker, a failure by its delivery's policy. Absent without a breaker. */
  breakerStep(policyOf: PolicyOf): Middleware | undefined {
    const breaker = this.breaker;
    if (!breaker) return undefined;
    const countsAsFailure = this.config.circuitBreaker?.countsAsFailure;
    return (invoke) => (payload, context) => {
      const ticket = this.tickets.get(context.message);
      let running: Promise<unknown>;
      try {
        running = Promise.resolve(invoke(payload, context));
      } catch (error) {
        running = Promise.reject(error);
      }
      if (!ticket) return running;
      return running.then(
        (value) => {
          this.apply(breaker.record(ticket, false, this.now(), context.attempt));
          return value;
        },
        (error: unknown) => {
          // Taken back by a stop before its handler was called, or lost while it ran (its channel closed, the
          // shutdown timeout; a time limit aborts the call's own signal, not this one): the broker
          // redelivers it, and a call our own loss cut short says nothing about the dependency.
          if (context.signal.aborted) throw error;
          // Recorded before the error goes on to be settled: an opening cancels the consumer before this nack goes out.
          const retryable = policyOf(context).isRetryable(error);
          if (countsAsOutage(error, retryable, countsAsFailure)) {
            // Before the change it may cause: the console names this error as the opening's cause.
            this.deps.observers?.counter?.outageCounted?.(this.queue, error);
            this.apply(breaker.record(ticket, true, this.now(), context.attempt));
          }
          throw error;
        },
      );
    };
  }

  /**
   * Counts a request answered without an error as a success: requests run outside the handler chain, and a half-open
   * circuit whose trials were all requests would otherwise never close. A failed request counts as nothing (its error
   * is its caller's answer, often a business one). Absent without a breaker.
   */
  answeredCounter(): ((message: ConsumeMessage, attempt: number) => void) | undefined {
    const breaker = this.breaker;
    if (!breaker) return undefined;
    return (message, attempt) => {
      const ticket = this.tickets.get(message);
      if (ticket) this.apply(breaker.record(ticket, false, this.now(), attempt));
    };
  }

  /**
   * Pauses the queue (its consumer is cancelled) until resume(); a second pause keeps the first one's record. `sender`:
   * the broker user a control command came from (its `by` is whatever the sender wrote), named in the log line.
   */
  pause(by: string, reason?: string, sender?: string): QueueFlowStatus {
    if (!this.paused) {
      this.paused = { by, reason, since: this.now() };
      this.changed(`paused by ${by}${sentAs(sender)}${reason ? `: ${reason}` : ''}`, by);
    }
    return this.status();
  }

  /** Ends a pause: the queue runs again, or waits for its circuit if that is open. */
  resume(by: string, sender?: string): QueueFlowStatus {
    if (this.paused) {
      this.paused = undefined;
      this.changed(`resumed by ${by}${sentAs(sender)}`, by);
    }
    return this.status();
  }

  status(): QueueFlowStatus {
    const status: QueueFlowStatus = { queue: this.queue, state: this.state };
    if (this.breaker) status.circuit = this.breaker.state;
    if (this.openUntil !== undefined) status.openUntil = new Date(this.openUntil).toISOString();
    if (this.paused) {
      const { by, reason, since } = this.paused;
      status.paused = { by, ...(reason !== undefined && { reason }), since: new Date(since).toISOString() };
    }
    const limit = this.config.rateLimit;
    if (limit) status.rateLimit = { calls: limit.calls, per: formatDuration(limit.perMs) };
    return status;
  }

  /** The application stops: no timer left, nothing waits; deliveries not yet handled are left to the closing channel. */
  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    this.limiter?.close();
    this.wake();
  }

  private async pass(handle: DeliveryHandler, message: ConsumeMessage, settle: Settle, signal: AbortSignal): Promise<void> {
    // A delivery over the rate limit waits for its turn, unless the queue is (or becomes) paused or open: then it goes
    // back to the broker at once (refused below) instead of waiting in memory for tokens.
    while (this.limiter && !this.stopped && !this.paused && this.breaker?.state !== 'open') {
      const turn = await this.limiter.wait(signal);
      if (turn === 'gone') return; // its channel died, or stopping: the broker redelivers it
      if (turn === 'go') break;
    }
    const ticket = await this.admit(signal);
    if (ticket === 'gone') return;
    if (ticket === 'refused') {
      // A single-active-consumer queue's consumer is handing the queue over: its closing channel returns the delivery in place.
      if (!this.giveBack(message, settle, !this.config.singleActiveConsumer)) return handle(message, settle, signal);
      return;
    }
    if (ticket === undefined) return handle(message, settle, signal);
    return this.withTicket(handle, message, settle, signal, ticket);
  }

  /** Runs the delivery with its ticket, whose outcome the counted invoker records; then frees its place. */
  private withTicket(handle: DeliveryHandler, message: ConsumeMessage, settle: Settle, signal: AbortSignal, ticket: CircuitTicket): Promise<void> {
    this.tickets.set(message, ticket);
    const done = () => {
      this.tickets.delete(message);
      (this.breaker as CircuitBreakerState).release(ticket); // no outcome was counted (parked unread, not an outage)
      this.wake();
    };
    return handleThen(handle, message, settle, signal, done);
  }

  /** A ticket (breaker), undefined (no breaker), 'refused' (paused or open) or 'gone' (the channel died, or stopping). */
  private async admit(signal: AbortSignal): Promise<CircuitTicket | undefined | 'refused' | 'gone'> {
    for (;;) {
      if (signal.aborted || this.stopped) return 'gone';
      if (this.paused) return 'refused';
      if (!this.breaker) return undefined;
      if (this.breaker.state === 'open') return 'refused';
      const ticket = this.breaker.admit();
      if (ticket) return ticket;
      // Half-open with every trial place taken: wait for one (a redelivery from before the change of prefetch).
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.waiters.push(done);
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  /**
   * Notes a delivery put back on purpose in `returns`, once however many parts of the engine tell of it (a pause takes
   * a waiting delivery back, and the hand-over that follows gives it back with its channel).
   */
  noteReturn(message: ConsumeMessage): void {
    if (this.noted.has(message)) return;
    this.noted.add(message);
    this.returns.add(returnIdentity(message, this.queue));
  }

  /**
   * Puts a delivery back in the queue, noted so that its return is not counted as a crash (a quorum queue counts it).
   * False, and nothing done, when one more return would pass the quorum delivery limit (the broker would drop it):
   * the pipeline then parks it (redelivery-limit) unread. `nack` false: only noted, the closing channel puts it back.
   */
  private giveBack(message: ConsumeMessage, settle: Settle, nack = true): boolean {
    if (this.config.queueType === 'quorum') {
      const headers = countedHeaders(message);
      const carried = this.deps.keepsDeliveryCounts?.() ? carriedCountOf(headers, 'quorum', this.config.queue) : 0;
      if (brokerDeliveryCount(headers, 'quorum') - carried >= QUORUM_DELIVERY_LIMIT - 1) return false;
      this.noteReturn(message);
    }
    if (nack) settle.nack(true);
    return true;
  }

  private wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  private apply(transition: CircuitTransition | undefined): void {
    if (!transition || this.stopped) return;
    this.timer?.cancel();
    this.timer = undefined;
    this.openUntil = undefined;
    if (transition.to === 'open' && transition.openForMs !== undefined) {
      this.openUntil = this.now() + transition.openForMs;
      this.timer = startTimer(transition.openForMs, () => {
        this.timer = undefined;
        this.apply(this.breaker?.halfOpen());
      }).unref();
    }
    this.changed(transition.reason);
  }

  /** Holds or releases the consumer as the state says, and logs and reports a change of state once. */
  private changed(reason: string, by?: string): void {
    const to = queueStateOf(this.paused, this.breaker?.state);
    if (!this.stopped) {
      if (to === 'paused' || to === 'open') {
        this.limiter?.interrupt(); // what waits for a turn goes back to the broker
        this.target?.hold(`the queue is ${to}`);
        // After the cancel, so that these returns cannot make room for more deliveries. A single-active-consumer queue's
        // consumer keeps its subscription and closes its channel once its handlers are done: that puts them back in their places.
        const inPlace = this.config.singleActiveConsumer;
        this.waiting?.recall(`the queue is ${to}`, (message, settle) => this.giveBack(message, settle, !inPlace));
      } else this.target?.release(to === 'half-open' ? this.config.circuitBreaker?.halfOpenCalls : undefined);
    }
    this.wake();
    const from = this.state;
    if (to === from) return;
    this.state = to;
    const line = `Queue "${this.queue}" is now ${to}: ${reason}`;
    if (to === 'open' || to === 'paused') this.deps.logger.warn(line);
    else this.deps.logger.log(line);
    if (this.deps.observers?.active)
      this.deps.observers.emit('queueStateChanged', { queue: this.queue, from, to, reason, ...(by !== undefined && { by }) });
  }
}

/** The broker user a control command was sent as, for a log line: the only part of it the broker vouches for. */
const sentAs = (sender: string | undefined): string => (sender === undefined ? '' : ` (a command sent as broker user "${sender}")`);
