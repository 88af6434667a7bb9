import { randomUUID } from 'node:crypto';
import type { Channel } from 'amqplib';
import type { ModuleConfig } from '../core/config/module.config.js';
import type { PublishingSide } from './publishing.side.js';
import { distinctSchedules, deadLetterConsumer, HandlerRuntime, type EngineHandler, type HandlerRuntimeDeps } from './handler.runtime.js';
import { type QueueConsumer } from '../amqp/queue.consumer.js';
import { declareHashExchange } from '../amqp/hash-exchange.probe.js';
import { readHashKey, recordHashKey } from '../amqp/hash-key.store.js';
import { decideHashKey, describeHashKey } from '../core/partitions/hash-key.record.js';
import { TopologyMismatchError } from '../errors/topology-mismatch.error.js';
import { checkChannelBudget } from '../core/partitions/channel.budget.js';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { exchangeExists } from '../amqp/queue-exists.probe.js';
import {
  assignPartitions,
  hashExchangeBindings,
  otherPartitionQueue,
  partitionConfigs,
  partitionNames,
  partitionOwners,
  type PartitionMember,
} from '../core/partitions/partition.plan.js';
import type { PartitionsConfig } from '../core/partitions/partitions.config.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import { planRetryTopology, tierQueues } from '../core/topology/retry-topology.plan.js';
import type { DeadLetterTarget } from '../pipeline/dead-letter.step.js';
import { type DurationTimer, startInterval, startTimer } from '../core/time/duration.timer.js';
import { errorMessage } from '../core/text/error-message.format.js';
import type { PartitionsStatus } from '../core/partitions/partitions.status.js';
import { PartitionRetirement } from './partition.retirement.js';
import { PartitionMembership } from './partition.membership.js';
import { brokerUsers } from '../core/config/broker-urls.reader.js';
import { onChannel } from './tier.retirement.js';
import { HashExchangeWatch } from './partition.exchange.js';
import { declareTopology } from '../amqp/topology.declarer.js';

/** What a partitioned handler needs besides what every handler runtime shares. */
export interface PartitionsDeps extends HandlerRuntimeDeps {
  config: Pick<ModuleConfig, 'urls' | 'connectTimeoutMs'>;
  /** The publishing connection: its plain channels (announcements are never published on the consuming one), its broker user now. */
  publishing: Pick<PublishingSide, 'channel' | 'user'>;
}

export type { PartitionStatus, PartitionsStatus } from '../core/partitions/partitions.status.js';

/**
 * Refuses handlers whose partitions one instance (its peers stopped or gone) could not consume on the consuming
 * connection, whose channel_max is known once it is open (core/partitions/channel.budget.ts). No-op without partitions.
 */
export function checkPartitionChannels(handlers: readonly EngineHandler[], connection: AmqpConnection): void {
  const needs = handlers.map((handler) => ({
    queue: handler.config.queue,
    where: handler.where,
    partitions: handler.config.partitions?.count,
    schedules: distinctSchedules(handler).length,
  }));
  checkChannelBudget(needs, connection.channelMax);
}

/**
 * A partitioned handler at run time (docs/partitions.md): one HandlerRuntime per partition queue, and the membership
 * that spreads the partitions over the running instances. Every instance announces itself and its count each
 * heartbeat; from the members heard within 3 heartbeats, each computes the same assignment, in which a partition goes
 * only to the instances that run it (a count changed in a rolling deploy). A partition changes owner only between
 * messages (the old owner hands over), and partition queues have a single active consumer, so two owners at once
 * (views that disagree for a heartbeat) never both run.
 */
export class PartitionedRuntime {
  readonly parts: HandlerRuntime[];
  readonly member = randomUUID();
  private readonly partitions: PartitionsConfig;
  private readonly membership: PartitionMembership;
  private readonly names: ReturnType<typeof partitionNames>;
  private members: PartitionMember[] = [];
  private ticker?: DurationTimer;
  private firstAssignment?: DurationTimer;
  private rebalancing?: Promise<void>;
  /** The hand-overs under way (each partition's release, which waits for the handlers running there). */
  private readonly handingOver = new Set<Promise<void>>();
  private again = false;
  private stopped = false;
  private assigned = false;
  private readonly depths = new Map<number, { depth: number; consumers: number }>();
  /** Partitions this instance owns whose consumer could not start (no channel left, say), tried again each heartbeat. */
  private readonly unstarted = new Set<HandlerRuntime>();
  /** What an earlier layout left: its `retired` queues stay in this application's view until deleted. */
  readonly retirement: PartitionRetirement;
  /** The consumer of the dead-letter queue every partition shares: each instance runs one, owner of a partition or not. */
  private readonly deadLetters: QueueConsumer;
  /** Declares the hash exchange again, with its bindings, should it be deleted while the application runs. */
  private readonly hashExchange: HashExchangeWatch;

  constructor(
    readonly handler: EngineHandler,
    private readonly deps: PartitionsDeps,
  ) {
    this.partitions = handler.config.partitions as PartitionsConfig;
    this.names = partitionNames(handler.config.queue);
    // A partition runs the handler with its own configuration (and, for the transport, its own routes and schedules).
    this.parts = partitionConfigs(handler.config).map(
      (config) => new HandlerRuntime({ ...handler, ...handler.forPartition?.(config), config }, deps),
    );
    this.retirement = new PartitionRetirement(handler, deps);
    // A member came, went, or took its first share: the partitions move at once, once this instance has taken its own.
    this.membership = new PartitionMembership(
      this.member,
      this.parts.length,
      this.queue,
      this.names.membersExchange,
      this.partitions.heartbeatMs,
      { ...deps, users: brokerUsers(deps.config.urls) },
      () => {
        if (this.assigned) this.rebalance();
      },
    );
    const [first] = this.parts;
    const targets = new Map(this.parts.map((part) => [part.queue, part.deadLetterTarget]));
    // What died in a partition of another count, or in the queue before partitions, comes here too: parked as there.
    const others = otherDeadLetterTargets(handler.config, deps.connection);
    this.deadLetters = deadLetterConsumer(first.handler.config, targets, () => first.parkTarget.redeclare(), deps, others);
    const restore = async () => {
      await this.declareHashExchange();
      await declareTopology(deps.connection, hashExchangeBindings(handler.config), false);
    };
    this.hashExchange = new HashExchangeWatch(deps.connection, this.queue, this.names.hashExchange, restore, deps.logger);
  }

  get queue(): string {
    return this.handler.config.queue;
  }

  /** This instance as the members' view counts it: its id, and the partitions it runs. */
  private get self(): PartitionMember {
    return { id: this.member, count: this.parts.length };
  }

  get isConsuming(): boolean {
    return this.membership.isListening && this.deadLetters.isConsuming && this.parts.every((p) => p.isConsuming);
  }

  status(): PartitionsStatus {
    const members = this.members.length > 0 ? this.members : [this.self];
    return {
      queue: this.queue,
      member: this.member,
      members: members.map((m) => m.id),
      partitions: this.parts.map((part, index) => {
        const owner = this.assigned ? partitionOwners(members)[index] : undefined;
        return { queue: part.queue, index, owner, mine: owner === this.member, consuming: part.consumesNow, ...this.depths.get(index) };
      }),
    };
  }

  /** Declares the hash exchange, then each partition, then retires what an earlier layout left. */
  async prepare(): Promise<void> {
    await this.declareHashExchange();
    for (const part of this.parts) await part.prepare();
    await this.retirement.prepare();
  }

  /**
   * RabbitMQ keeps an existing consistent-hash exchange's arguments on a redeclare with others, and AMQP cannot read
   * them: what it hashes is recorded beside it, and a start configured with another key fails before declaring.
   */
  private async declareHashExchange(): Promise<void> {
    const { config, connection, recordPublisher, logger } = this.deps;
    const { hashExchange, keyRecord } = this.names;
    const configured = this.partitions.hashArguments;
    const open = () => connection.createChannel('partition key record', true);
    const existed = await exchangeExists(open, hashExchange);
    const decision = decideHashKey(existed, existed ? await readHashKey(open, keyRecord) : undefined, configured);
    if (decision.action === 'mismatch') {
      const hashKeys = { configured: describeHashKey(configured), found: describeHashKey(decision.found) };
      throw new TopologyMismatchError('exchange', hashExchange, `hashes ${hashKeys.found}`, undefined, hashKeys);
    }
    await declareHashExchange({ ...config, queue: this.queue, exchange: hashExchange, arguments: configured });
    if (decision.action === 'keep') return;
    await recordHashKey(open, recordPublisher, keyRecord, { hashArguments: configured });
    if (decision.action === 'unverified') {
      logger.warn(
        `"${this.queue}": the hash exchange "${hashExchange}" exists without a record of what it hashes ("${keyRecord}"), so it is taken to hash partitions.key ${describeHashKey(configured)}, as configured, and recorded so. RabbitMQ keeps an exchange's first arguments: if it was declared with another key, stop every instance, delete the exchange and start again (docs/partitions.md, "Changing the key").`,
      );
    }
  }

  /** Joins the members and, after hearing the others for a heartbeat and a half, takes its share. */
  async consume(): Promise<void> {
    await this.membership.listen();
    await this.membership.announce();
    // A stop() that came meanwhile found neither these channels nor the timers below: an interval started now would
    // keep the process alive after app.close().
    if (this.stopped) return this.membership.close();
    const { heartbeatMs } = this.partitions;
    this.ticker = startInterval(heartbeatMs, () => this.tick());
    this.firstAssignment = startTimer(Math.ceil(heartbeatMs * 1.5), () => {
      this.assigned = true;
      this.rebalance();
    });
    await Promise.all([this.retirement.start(), this.deadLetters.start()]);
    this.deps.logger.log(
      `"${this.queue}": ${this.parts.length} partitions, member ${this.member}; taking a share once the other instances are heard (${Math.ceil(heartbeatMs * 1.5)} ms)`,
    );
  }

  /** After a reconnection: the partitions it owns resume; it listens to the members again. */
  async resume(): Promise<void> {
    const results = await Promise.allSettled([
      ...this.parts.map((p) => p.resume()),
      this.membership.listen(),
      this.retirement.start(),
      this.deadLetters.start(),
    ]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** Tells the others it leaves (they take its partitions at once), then hands every partition it owns over. */
  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    this.ticker?.cancel();
    this.firstAssignment?.cancel();
    await this.membership.announce(true);
    await this.rebalancing?.catch(() => undefined);
    await Promise.all([
      ...this.handingOver,
      ...this.parts.map((p) => p.stop(timeoutMs)),
      this.retirement.stop(timeoutMs),
      this.deadLetters.stop(timeoutMs),
    ]);
    await Promise.all([this.membership.close(), this.hashExchange.close()]);
  }

  private tick(): void {
    void this.membership.announce();
    this.membership.checkHearing();
    if (this.assigned) this.rebalance();
    this.retirement.lookAgain(this.membership.alive(Date.now()));
    void this.measure();
    this.hashExchange.check();
  }

  /** Brings the partitions this instance consumes in line with the view; one pass at a time, another after if asked meanwhile. */
  private rebalance(): void {
    if (this.rebalancing) {
      this.again = true;
      return;
    }
    this.rebalancing = this.assign()
      .catch((error: unknown) => this.deps.logger.warn(`"${this.queue}": could not rebalance its partitions: ${errorMessage(error)}`))
      .finally(() => {
        this.rebalancing = undefined;
        if (this.again && !this.stopped) {
          this.again = false;
          this.rebalance();
        }
      });
  }

  private async assign(): Promise<void> {
    if (this.stopped) return;
    const members = this.membership.alive(Date.now());
    const gone = this.members.filter((m) => !members.some((alive) => alive.id === m.id));
    if (gone.length > 0) this.deps.logger.log(`"${this.queue}": no longer hears ${gone.map((m) => m.id).join(', ')}`);
    this.members = members;
    const mine = new Set(assignPartitions(members, this.self));
    const leaving = this.parts.filter((p, i) => p.isOwned && !mine.has(i));
    const taking = this.parts.filter((p, i) => !p.isOwned && mine.has(i));
    for (const part of leaving) this.unstarted.delete(part);
    // Owned, but its consumer could not start: tried again (while the connection is up: after a reconnection resume() does it).
    const retrying = this.deps.connection.isConnected ? this.parts.filter((p, i) => p.isOwned && mine.has(i) && this.unstarted.has(p)) : [];
    const list = (parts: HandlerRuntime[]) => parts.map((p) => p.queue.slice(this.queue.length + 1)).join(', ') || 'none';
    if (leaving.length > 0 || taking.length > 0) {
      this.deps.logger.log(`"${this.queue}": ${members.length} member(s); taking ${list(taking)}, handing over ${list(leaving)}`);
    }
    for (const part of leaving) this.handOver(part);
    const starting = [...taking, ...retrying];
    this.noteStarts(starting, await Promise.allSettled(starting.map((p) => p.acquire())));
    // Subscribed behind the owners of its share (which gave it none so far): they hand over once they hear this.
    await this.membership.markReady();
  }

  /**
   * Lets a partition go without holding up the next pass: a hand-over waits for the handlers running there (up to
   * `shutdownTimeout`), and a member gone meanwhile must not wait that long for its partitions to be taken. Taking
   * one back while it is still handed over is safe: the new subscription waits behind the old on the broker.
   */
  private handOver(part: HandlerRuntime): void {
    const started = Date.now();
    const done: Promise<void> = part
      .release(this.deps.handOverTimeoutMs)
      .then(
        () => this.deps.logger.log(`"${part.queue}": handed over in ${Date.now() - started} ms`),
        (error: unknown) => this.deps.logger.warn(`"${part.queue}": could not hand over: ${errorMessage(error)}`),
      )
      .finally(() => this.handingOver.delete(done));
    this.handingOver.add(done);
  }

  /** Keeps count of the partitions owned whose consumer did not start (tried again each heartbeat); warns when they first fail. */
  private noteStarts(parts: HandlerRuntime[], results: PromiseSettledResult<void>[]): void {
    const name = (p: HandlerRuntime) => p.queue.slice(this.queue.length + 1);
    const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [{ p: parts[i], reason: r.reason as unknown }] : []));
    const fresh = failed.filter(({ p }) => !this.unstarted.has(p));
    const recovered = parts.filter((p, i) => results[i]?.status === 'fulfilled' && this.unstarted.has(p));
    for (const { p } of failed) this.unstarted.add(p);
    for (const p of recovered) this.unstarted.delete(p);
    if (fresh.length > 0) {
      this.deps.logger.warn(
        `"${this.queue}": could not start consuming ${fresh.map(({ p }) => name(p)).join(', ')} (${errorMessage(fresh[0].reason)}); ${fresh.length === 1 ? 'it stays' : 'they stay'} this instance's and unconsumed, tried again each heartbeat (docs/partitions.md#channels)`,
      );
    }
    if (recovered.length > 0) this.deps.logger.log(`"${this.queue}": consuming ${recovered.map(name).join(', ')} now`);
  }

  /** Each partition's depth and consumers, for the status; a failure leaves the last figures. */
  private async measure(): Promise<void> {
    const { connection, observers } = this.deps;
    const measure = async (channel: Channel) => {
      for (const [index, part] of this.parts.entries()) {
        const { messageCount, consumerCount } = await channel.checkQueue(part.queue);
        this.depths.set(index, { depth: messageCount, consumers: consumerCount });
        if (observers?.active) {
          const observed = { queue: this.queue, partition: index, depth: messageCount, consumers: consumerCount, owned: part.consumesNow };
          observers.emit('partitionObserved', observed);
        }
      }
    };
    // A partition queue deleted or the connection down: the next heartbeat looks again.
    await onChannel(connection, 'partition depths', measure, true).catch(() => undefined);
  }
}

/**
 * Where the dead-letter queue that a partitioned handler's partitions share (`<queue>.dlx.dead`) sends what died in a
 * queue of the handler beyond this instance's partitions: a partition of a larger count (run by another instance in a
 * rolling change, or retired) or the queue of the handler before partitions (otherPartitionQueue). Such a message is
 * handled as the dead-letter consumer of an instance running that queue would: parked in that queue's own parking
 * queue with the reason of its death, or (a first failure the death sort sent there) sent on to that queue's first
 * tier. A replay from that parking queue goes back to that queue, whose owner or mover takes it. Any other name is
 * none of these (undefined).
 *
 * Should the parking queue or first tier be gone, only those two are declared again (as that queue's topology has
 * them), never the queue itself or a binding: a retired partition is not brought back into the hash exchange.
 */
function otherDeadLetterTargets(config: HandlerConfig, connection: AmqpConnection): (queue: string) => DeadLetterTarget | undefined {
  const known = new Map<string, DeadLetterTarget | undefined>(); // at most MAX_PARTITIONS + 1 names: the queue and its partitions
  return (queue) => {
    if (known.has(queue)) return known.get(queue);
    const other = otherPartitionQueue(config, queue);
    const target = other && targetOf(other, connection);
    if (other) known.set(queue, target);
    return target;
  };
}

function targetOf(config: HandlerConfig, connection: AmqpConnection): DeadLetterTarget {
  const firstTier = tierQueues(config)[0];
  const plan = planRetryTopology(config);
  const own = new Set([config.errorQueue, firstTier]);
  const redeclare = () => declareTopology(connection, { exchanges: [], queues: plan.queues.filter((q) => own.has(q.name)), bindings: [] }, false);
  return { errorQueue: config.errorQueue, firstTier, redeclare };
}
