import type { ConsumeMessage } from 'amqplib';
import type { HandOverNote } from '../core/delivery/hand-over.note.js';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import type { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import { handlerEntry, recordOrWarn } from '../amqp/handler-registry.writer.js';
import { TierRouter, type MessageParker, type ParkTarget } from '../pipeline/park-route.steps.js';
import { QueueConsumer } from '../amqp/queue.consumer.js';
import { queueExists } from '../amqp/queue-exists.probe.js';
import { deliveryChain } from './delivery.chain.js';
import type { DeliveryRouter, HandlerInvoker } from '../pipeline/delivery.contracts.js';
import { onChannel, rebindFirstFailuresIfOwner, takeOverFirstFailures, type Retirement } from './tier.retirement.js';
import { TopologyGuard } from '../amqp/topology.guard.js';
import { declareTopology } from '../amqp/topology.declarer.js';
import { consumingLine, type PatternPolicyLine } from '../core/text/consuming-line.format.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import type { ReconnectPolicy } from '../core/connection/reconnect.policy.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { scheduleIdOf } from '../core/topology/retry-plan.record.js';
import { businessQueueArguments, planRetryTopology, retryNames, tierQueues } from '../core/topology/retry-topology.plan.js';
import { carriedCountOf, countedHeaders, keepsDeliveryCounts, unsettledDeliveries } from '../core/delivery/delivery.count.js';
import { returnIdentity } from '../core/delivery/own-returns.ledger.js';
import { queueTypeArgument } from '../core/topology/queue-type.mismatch.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { QueueState } from '../core/breaker/queue.state.js';
import { QueueFlowControl } from './queue-flow.control.js';
import { DeadLetterStep, type DeadLetterTarget } from '../pipeline/dead-letter.step.js';
import { queueLimitWarnings } from '../core/config/queue-limits.config.js';

/** Dead letters are few and each is a confirmed publish: a small window is enough. */
const DEAD_LETTER_PREFETCH = 10;

/** The consumer of a handler's dead-letter queue, parking into `targets` (or `others`) by the queue each message died in. */
export function deadLetterConsumer(
  config: HandlerConfig,
  targets: ReadonlyMap<string, DeadLetterTarget>,
  redeclare: () => Promise<unknown>,
  deps: HandlerRuntimeDeps,
  others?: (queue: string) => DeadLetterTarget | undefined,
): QueueConsumer {
  const { connection, logger, resume, observers, parker } = deps;
  const step = new DeadLetterStep(targets, config.limits?.onExpired ?? 'park', parker, logger, observers, undefined, others);
  const queue = config.deadLetterQueue ?? retryNames(config.queue).deadLetterQueue;
  return new QueueConsumer({ queue, prefetch: DEAD_LETTER_PREFETCH, connection, logger, resume, redeclare, observers }, step.handle);
}

const presenceQueueOf = (schedule: HandlerConfig) => retryNames(schedule.queue).presenceQueue(scheduleIdOf(tierQueues(schedule)));

/** The queue's own schedule, then the other schedules its messages use, each once. */
export function distinctSchedules(handler: EngineHandler): HandlerConfig[] {
  const byFirstTier = new Map<string, HandlerConfig>();
  for (const schedule of [handler.config, ...(handler.schedules ?? [])]) {
    const first = tierQueues(schedule)[0] ?? '';
    if (!byFirstTier.has(first)) byFirstTier.set(first, schedule);
  }
  return [...byFirstTier.values()];
}

/** A handler to run: its validated configuration, how to call it, and where it is declared (for messages). */
export interface EngineHandler {
  config: HandlerConfig;
  invoke: HandlerInvoker;
  /** "Class.method", or a pattern: named in logs. */
  where: string;
  /** Chooses handler and policy per delivery (the transport's patterns); absent: `invoke` with `config`'s policy. */
  route?: DeliveryRouter;
  /** Schedules besides `config`'s whose tiers this queue's messages use (patterns with delays of their own). */
  schedules?: HandlerConfig[];
  /** The patterns whose policy is not the queue's (the transport's `retry` extras): named in the start line. */
  patterns?: readonly PatternPolicyLine[];
  /**
   * The route, schedules and patterns of the partition whose configuration is `config`, for a handler whose routing
   * depends on the queue (the transport: a pattern's schedule has tiers per partition). Absent: every partition shares the handler's.
   */
  forPartition?: (config: HandlerConfig) => Pick<EngineHandler, 'route' | 'schedules' | 'patterns'>;
}

/** Every tier the queue's messages may wait in: its own schedule's, then those of the patterns with delays of their own. */
export const scheduleTiers = (handler: EngineHandler): string[] => distinctSchedules(handler).flatMap(tierQueues);

export interface HandlerRuntimeDeps {
  connection: AmqpConnection;
  parker: MessageParker;
  recordPublisher: ConfirmPublisher;
  logger: RetryLogger;
  resume: ReconnectPolicy;
  observers?: ObserverHub;
  /** The application's name, recorded with the handler's queue in the registry (RetryModuleOptions.application). */
  application?: string;
  /** How long a hand-over (a partition's, a single-active-consumer queue held or stopped) lets handlers in flight finish. */
  handOverTimeoutMs: number;
  /** Tells the other instances of a hand-over's returns on purpose (its note); absent: they count them as crashes. */
  announceReturns?: (note: HandOverNote) => Promise<void>;
}

/** Whether one queue is consumed, for health checks. */
export interface QueueStatus {
  /** The handler queue (or partition queue). */
  queue: string;
  /** True while consumed, also while paused or open on purpose (see `state`), or (a partition) while another instance owns it. */
  consuming: boolean;
  /** A handler queue's state: running, half-open, open (its circuit breaker) or paused (by someone). */
  state?: QueueState;
}

/**
 * One handler at run time: its topology, the consumer of its queue, and a consumer of each schedule's presence queue,
 * which tells other versions' starts that its tiers are in use.
 */
export class HandlerRuntime {
  private consumer: QueueConsumer;
  /** The circuit breaker, the pause and the rate limit of the queue (a partition has none of them: see handler.config). */
  readonly flow: QueueFlowControl;
  private readonly newConsumer: () => QueueConsumer;
  private owned: boolean;
  /** The consumer of the queue's dead-letter queue; a partition has none: its handler's one serves every partition. */
  private readonly deadLetters?: QueueConsumer;
  /** One per schedule: the queue's own first. */
  private readonly presences: Array<{ schedule: HandlerConfig; consumer: QueueConsumer }>;

  constructor(
    readonly handler: EngineHandler,
    private readonly deps: HandlerRuntimeDeps,
  ) {
    const { config } = handler;
    const { connection, logger, resume } = deps;
    const names = retryNames(config.queue);
    const redeclare = () => this.declare();
    const queueArguments = businessQueueArguments(config.queue, config.queueType, config);
    const schedules = distinctSchedules(handler);
    const exchanges = [names.deadLetterExchange, names.firstFailureExchange, names.deathSortExchange, names.firstTierExchange, names.returnExchange];
    const queues = [...schedules.flatMap(tierQueues), config.deadLetterQueue ?? names.deadLetterQueue];
    const guard = new TopologyGuard(connection, { exchanges, queues }, redeclare, logger, `"${config.queue}"`);
    const keepsCounts = config.queueType === 'quorum' ? keepsCountsOf(connection) : undefined;
    this.flow = new QueueFlowControl(config, { logger, observers: deps.observers, keepsDeliveryCounts: keepsCounts });
    const tiers = new TierRouter(config.queue, deps.parker.publisher, guard, redeclare, logger);
    const park = { errorQueue: config.errorQueue, redeclare };
    const { invoke, route: router } = handler;
    const quorum = config.queueType === 'quorum';
    const gated = deliveryChain({
      config,
      invoke,
      router,
      flow: this.flow,
      parker: deps.parker,
      park,
      tiers,
      logger,
      observers: deps.observers,
      keepsDeliveryCounts: keepsCounts,
    });
    // A delivery put back on purpose (paused, circuit open) is no suspect: its return was not a crash; nor, on a broker
    // that keeps counts through dead-lettering, is one that only failed its earlier attempts.
    const returns = this.flow.returns;
    const isSuspect = keepsCounts
      ? (m: ConsumeMessage) => {
          const counted = countedHeaders(m);
          const carried = keepsCounts() ? carriedCountOf(counted, 'quorum', config.queue) : 0;
          return (
            unsettledDeliveries(counted, 'quorum', carried) > 0 &&
            (returns.isEmpty || unsettledDeliveries(counted, 'quorum', carried + returns.claim(returnIdentity(m, config.queue))) > 0)
          );
        }
      : undefined;
    // A single-active-consumer queue (a partition too) is handed over, never cancelled: see QueueConsumer's handOverMs.
    const handOverMs = config.singleActiveConsumer ? deps.handOverTimeoutMs : undefined;
    // What a hand-over's closing channel gives back unhandled is a return on purpose too, not a crash; the next owner,
    // another process as a rule, is told of it (hand-over.note.ts).
    const returned = quorum ? (m: ConsumeMessage) => this.flow.noteReturn(m) : undefined;
    const announce = deps.announceReturns;
    const handingOver =
      quorum && handOverMs !== undefined && announce
        ? async () => {
            const noted = returns.takeUnannounced();
            if (noted.length > 0) await announce({ queue: config.queue, returns: noted });
          }
        : undefined;
    this.newConsumer = () => {
      const consumer = new QueueConsumer(
        {
          queue: config.queue,
          prefetch: config.prefetch,
          connection,
          logger,
          resume,
          redeclare,
          queueArguments,
          isSuspect,
          returned,
          handingOver,
          waitsAside: config.ordering !== undefined, // the ordering step waits for its key aside from the gate
          observers: deps.observers,
          handOverMs,
        },
        gated,
      );
      this.flow.attach(consumer); // a partition's next consumer (release) is held and released as the state says
      return consumer;
    };
    this.consumer = this.newConsumer();
    if (config.partitionOf === undefined) {
      this.deadLetters = deadLetterConsumer(config, new Map([[config.queue, this.deadLetterTarget]]), redeclare, deps);
    }
    this.owned = config.partitionOf === undefined;
    this.presences = schedules.map((schedule) => ({
      schedule,
      consumer: new QueueConsumer(
        { queue: presenceQueueOf(schedule), prefetch: 1, connection, logger, resume, redeclare: () => this.declarePresence(schedule) },
        async (_message, settle) => settle.ack(), // nobody publishes there; should anyone, it is dropped
      ),
    }));
  }

  /** Takes another instance's note of its hand-over of this queue: those returns were no crash. */
  creditReturns(note: HandOverNote): void {
    if (this.handler.config.queueType !== 'quorum') return;
    for (const [identity, count] of note.returns) this.flow.returns.credit(identity, count);
  }

  get queue(): string {
    return this.handler.config.queue;
  }

  /** Where this queue's messages park, and how to declare its topology again should the parking queue be gone. */
  get parkTarget(): ParkTarget {
    return { errorQueue: this.handler.config.errorQueue, redeclare: () => this.declare() };
  }

  /** The park target, and the first tier of the queue's own schedule: where its dead-letter queue sends a first failure. */
  get deadLetterTarget(): DeadLetterTarget {
    return { ...this.parkTarget, firstTier: tierQueues(this.handler.config)[0] };
  }

  /** True while the queue's consumer (if this instance owns it) and every schedule's presence consumer run. */
  get isConsuming(): boolean {
    return (
      (!this.owned || ((this.consumer.isConsuming || this.consumer.isHeld) && (this.deadLetters?.isConsuming ?? true))) &&
      this.presences.every((p) => p.consumer.isConsuming)
    );
  }

  /** Whether this instance consumes the queue: always, but a partition only while it owns it (acquire/release). */
  get isOwned(): boolean {
    return this.owned;
  }

  /** Whether this instance owns the queue and its consumer is subscribed (a partition owned may fail to start: no channel). */
  get consumesNow(): boolean {
    return this.owned && this.consumer.isConsuming;
  }

  /** Deliveries of the queue taken and not yet settled. */
  get inFlight(): number {
    return this.consumer.inFlightCount;
  }

  /** First start, before consuming: declares, marks the schedule as in use, takes first failures, retires what nobody runs. */
  async prepare(): Promise<void> {
    const { config } = this.handler;
    // The other schedules first: once their presence queues are consumed, the take-over below sees them in use.
    for (const { schedule, consumer } of [...this.presences].reverse()) {
      await declareTopology(this.deps.connection, planRetryTopology(schedule, { firstFailures: false }));
      await this.declarePresence(schedule);
      await consumer.start();
    }
    this.report(await takeOverFirstFailures(this.deps.connection, this.deps.recordPublisher, config));
    // For the CLI: a failure is logged and the start goes on (see recordOrWarn).
    await recordOrWarn(
      () => this.deps.connection.createChannel('handler registry', true),
      this.deps.recordPublisher,
      { ...handlerEntry(config, this.deps.application), tiers: scheduleTiers(this.handler) },
      this.deps.logger,
    );
  }

  async consume(): Promise<void> {
    const { config } = this.handler;
    if (!this.owned) return; // a partition: consumed once assigned (acquire)
    await this.deadLetters?.start();
    await this.consumer.start();
    this.deps.logger.log(consumingLine(config, this.handler.patterns));
    for (const warning of queueLimitWarnings(config.queue, config.limits, config.queueType)) this.deps.logger.warn(warning);
  }

  /**
   * After a reconnection: declares again (first failures only if no newer version took them) and consumes. The consumer
   * does not wait for the presence queue: a classic queue cannot be declared while its cluster node is down (404 "home
   * node ... is down"); that failure is thrown after the consumer started, and the recovery tries again later.
   */
  async resume(): Promise<void> {
    await this.declare();
    const presences = (async () => {
      for (const { schedule } of this.presences) await this.declarePresence(schedule);
      await Promise.all(this.presences.map((p) => p.consumer.start()));
    })();
    const [presence, consumer, deadLetters] = await Promise.allSettled([
      presences,
      this.owned ? this.consumer.start() : undefined,
      this.deadLetters?.start(),
    ]);
    const failed = [consumer, deadLetters, presence].find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  async stop(timeoutMs: number): Promise<void> {
    this.flow.stop();
    // A partition hands over even when the application stops: a plain stop cancels first, and the next instance's
    // consumer would start on the messages behind those still running here.
    if (this.handler.config.partitionOf) await this.release(timeoutMs);
    else await Promise.all([this.consumer.stop(timeoutMs), this.deadLetters?.stop(timeoutMs)]);
    await Promise.all(this.presences.map((p) => p.consumer.stop(0)));
  }

  /** A partition: starts consuming it (on a single-active-consumer queue, it waits there until the owner before lets go). */
  async acquire(): Promise<void> {
    this.owned = true;
    await this.consumer.start();
  }

  /** A partition: lets it go to the next consumer between messages (QueueConsumer.handOver). */
  async release(timeoutMs: number): Promise<void> {
    this.owned = false;
    const leaving = this.consumer;
    this.consumer = this.newConsumer();
    await leaving.handOver(timeoutMs);
  }

  private async declare(): Promise<void> {
    const { connection, logger } = this.deps;
    const { queue, partitionOf } = this.handler.config;
    // A partition deleted under a running application: declared again, it is bound to the hash exchange last.
    const deleted =
      partitionOf !== undefined && !(await queueExists(() => connection.createChannel(`queue "${queue}" check`, true), queue).catch(() => true));
    // Tried again in a loop until it succeeds: no type probe (see declareTopology), the refusal is reported as it is.
    for (const { schedule } of this.presences) await declareTopology(connection, planRetryTopology(schedule, { firstFailures: false }), false);
    await rebindFirstFailuresIfOwner(connection, this.handler.config);
    if (deleted && partitionOf) {
      logger.warn(
        `"${queue}" was deleted and is declared again: the broker adds it to the hash exchange "${partitionOf.queue}" after the other partitions, which renumbers them: most keys may hash to another partition from now on (as after a change of count, order holds across it only for keys that did not move, docs/partitions.md)`,
      );
    }
  }

  /** Auto-deleted with its last consumer: it exists exactly while some instance runs this schedule. */
  private async declarePresence(schedule: HandlerConfig): Promise<void> {
    // Classic, stated: a quorum queue cannot be auto-deleted, and a vhost's default type must not decide.
    const options = { durable: true, autoDelete: true, arguments: queueTypeArgument('classic') };
    await onChannel(this.deps.connection, 'retry topology declaration', (channel) => channel.assertQueue(presenceQueueOf(schedule), options));
  }

  private report({ deleted, draining, kept, ignored }: Retirement): void {
    const { queue } = this.handler.config;
    const { logger } = this.deps;
    // One line a start, whatever the number of records: the names bounded, the records removed by this start.
    if (ignored.records > 0) {
      const shown = ignored.names.slice(0, 10).map((name) => JSON.stringify(name));
      const more = ignored.names.length > shown.length ? ` and ${ignored.names.length - shown.length} more` : '';
      logger.warn(
        `"${queue}": ignored ${ignored.records} record(s) in "${retryNames(queue).planQueue}" that name queues other than tiers of "${queue}" (${shown.join(', ') || 'no tiers'}${more}): nothing was unbound or deleted by them, and they are removed. A start writes only its own tiers there; whoever else can publish to the default exchange can write such a record`,
      );
    }
    if (deleted.length > 0) logger.log(`"${queue}": deleted the empty tiers of an earlier configuration: ${deleted.join(', ')}`);
    if (draining.length > 0)
      logger.warn(`"${queue}": tiers of an earlier configuration still hold messages and drain to the queue: ${draining.join(', ')}`);
    if (kept.length > 0) logger.log(`"${queue}": another running version uses these tiers; they stay: ${kept.join(', ')}`);
  }
}

/** Whether the broker `connection` is on keeps delivery counts through dead-lettering, read again after a reconnection. */
function keepsCountsOf(connection: AmqpConnection): () => boolean {
  let seen: unknown;
  let keeps = false;
  return () => {
    const properties = connection.serverProperties;
    if (properties !== seen) {
      seen = properties;
      keeps = keepsDeliveryCounts(properties);
    }
    return keeps;
  };
}
