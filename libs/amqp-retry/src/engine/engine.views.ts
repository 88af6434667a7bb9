import type { QueueConsumer } from '../amqp/queue.consumer.js';
import { queueStateWord } from '../core/breaker/queue.state.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import { planDelayTopology } from '../core/delivery/delay.plan.js';
import type { ActivityCounter, ActivityCounts } from '../core/observe/activity.counter.js';
import type { ScopeQueue } from '../core/parking/parked.scope.js';
import { fullQueueHint } from '../core/publish/full-queue.hint.js';
import { PublishError } from '../errors/publish.error.js';
import { scheduleTiers, type HandlerRuntime, type QueueStatus } from './handler.runtime.js';
import type { OutboxRelayHealth } from './outbox.relay.js';
import { PartitionedRuntime } from './partitions.runtime.js';
import type { QueueFlowControl } from './queue-flow.control.js';

/** A handler's runtime: one queue, or the partitions of a partitioned handler. */
export type Runtime = HandlerRuntime | PartitionedRuntime;

// What the engine shows of its queues (the page, health checks, the parked-messages scope), read off its runtimes.

/** What a health check needs: each connection up or not, each queue consumed or not. */
export interface EngineHealth {
  /** Each of the two connections: up or not; undefined before it first opened. */
  connections: {
    /** The consuming connection (topology, consumers). */
    consume?: boolean;
    /** The publishing connection (the application's publishes, parked copies, forwarded delayed messages). */
    publish?: boolean;
  };
  /** Each handler queue: consumed or not. */
  queues: QueueStatus[];
  /** The outbox relay of this instance, when it runs one. */
  outbox?: OutboxRelayHealth;
}

/** One of the engine's queues as its page shows it live: deliveries in flight, and outcomes counted since `activity()` was first called. */
export interface QueueActivity extends ActivityCounts {
  /** The handler queue. */
  queue: string;
  /** Deliveries taken by this instance and not yet settled. */
  inFlight: number;
  /** The page's State word from a feature that can stop the queue ("breaker open", "paused"); absent when consuming as usual. */
  state?: string;
}

/** Each queue's runtime: a partitioned handler's partitions one by one. */
const queueRuntimes = (runtimes: readonly Runtime[]): HandlerRuntime[] => runtimes.flatMap((r) => (r instanceof PartitionedRuntime ? r.parts : [r]));

/**
 * The queues the control listener binds: every handler queue (a partitioned handler by the name it was given), and the
 * partitions of a quorum partitioned handler, whose hand-overs send notes by partition (hand-over.note.ts).
 */
export const consumedQueues = (runtimes: readonly Runtime[]): string[] => {
  const noted = queueRuntimes(runtimes).filter((r) => r.handler.config.queueType === 'quorum');
  return [...new Set([...runtimes.map((r) => r.queue), ...noted.map((r) => r.queue)])];
};

/** The runtime of one handler queue or partition queue, if the engine has it. */
export const queueRuntimeOf = (runtimes: readonly Runtime[], queue: string): HandlerRuntime | undefined =>
  queueRuntimes(runtimes).find((r) => r.queue === queue);

/** The queues that park in the engine, with their parking queues and tiers (see RetryEngine.parkingQueues). */
export function parkingQueues(runtimes: readonly Runtime[], config: ModuleConfig): ScopeQueue[] {
  const handlers = queueRuntimes(runtimes).map(({ handler }) => ({
    queue: handler.config.queue,
    errorQueue: handler.config.errorQueue,
    tiers: scheduleTiers(handler), // the patterns' own schedules too: their messages wait there
  }));
  handlers.push(...runtimes.flatMap((r) => (r instanceof PartitionedRuntime ? r.retirement.retired : [])));
  if (config.delayPrefix === undefined) return handlers;
  const { readyQueue, errorQueue } = planDelayTopology(config.delayPrefix, config.delayQueueType);
  return [...handlers, { queue: readyQueue, errorQueue, tiers: [] }];
}

/** Each queue's deliveries in flight and outcomes counted (see RetryEngine.activity). */
export function queueActivity(runtimes: readonly Runtime[], forwarder: QueueConsumer | undefined, counter: ActivityCounter): QueueActivity[] {
  const live: QueueActivity[] = queueRuntimes(runtimes).map((r) => {
    const flow = r.flow.status();
    const state = queueStateWord(flow.state, flow.paused?.by);
    return { queue: r.queue, inFlight: r.inFlight, ...counter.countsOf(r.queue), ...(state !== undefined && { state }) };
  });
  if (forwarder) live.push({ queue: forwarder.queue, inFlight: forwarder.inFlightCount, ...counter.countsOf(forwarder.queue) });
  return live;
}

/** Each queue consumed or not, for health checks. */
export function queueStatuses(runtimes: readonly Runtime[], forwarder: QueueConsumer | undefined): QueueStatus[] {
  const queues: QueueStatus[] = queueRuntimes(runtimes).map((r) => ({ queue: r.queue, consuming: r.isConsuming, state: r.flow.status().state }));
  if (forwarder) queues.push({ queue: forwarder.queue, consuming: forwarder.isConsuming });
  return queues;
}

/**
 * A handler queue's flow. A partitioned handler has none to pause: cancelling a partition's consumer hands the
 * partition to another instance's standby consumer while this one's deliveries still run, and the key's order breaks.
 */
export function flowOf(runtimes: readonly Runtime[], queue: string): QueueFlowControl {
  const runtime = runtimes.find((r) => r.queue === queue || (r instanceof PartitionedRuntime && r.parts.some((p) => p.queue === queue)));
  if (runtime instanceof PartitionedRuntime) {
    const what = queue === runtime.queue ? `"${queue}" is partitioned` : `"${queue}" is a partition of "${runtime.queue}"`;
    throw new RangeError(
      `${what}, and partitioned handlers cannot be paused (cancelling a partition's consumer would start another instance's on the key's next messages while this one's still run); stop its instances instead (docs/partitions.md)`,
    );
  }
  if (!runtime) {
    const known = runtimes.map((r) => `"${r.queue}"`).join(', ') || 'none (not started yet?)';
    throw new RangeError(`No handler of this application consumes "${queue}"; its handler queues: ${known}`);
  }
  return runtime.flow;
}

/** A nacked publish's error, naming the full handler queues that refuse publishes and that it may reach (see fullQueueHint). */
export function explainRefusal(error: unknown, exchange: string, routingKey: string, runtimes: readonly Runtime[]): unknown {
  if (!(error instanceof PublishError) || !error.message.includes('nacked')) return error;
  const handlers = runtimes.map((r) => r.handler.config);
  const hint = fullQueueHint(exchange, routingKey, handlers);
  return hint === undefined ? error : new PublishError(exchange, routingKey, hint, error.brokerCode);
}
