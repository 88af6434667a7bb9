import { QueueConsumer } from '../amqp/queue.consumer.js';
import { queueExists } from '../amqp/queue-exists.probe.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import type { ScopeQueue } from '../core/parking/parked.scope.js';
import { partitionConfigs, partitionNames, PARTITION_WEIGHT, searchesRetired, type PartitionMember } from '../core/partitions/partition.plan.js';
import { RETIRED_LOOK_MS, RetiredPartitionWatch } from '../core/partitions/retired-partition.watch.js';
import { movedProperties, movedRoutingKey } from '../core/partitions/partition-move.route.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { sleep } from '../core/time/duration.timer.js';
import { scheduleTiers, type EngineHandler, type HandlerRuntimeDeps } from './handler.runtime.js';
import { onChannel } from './tier.retirement.js';

/** How often at most a retired partition's mover cuts it off the hash exchange again (see moveOut). */
const REBIND_CHECK_MS = 1_000;

/**
 * What a partitioned handler leaves behind when its layout changes: partition queues beyond a smaller `count`, and the
 * queue of the handler before partitions. Each is cut from what fed it, its messages move into the hash exchange, and
 * its parking queue stays in this application's view (`retired`) until an operator deletes it.
 */
export class PartitionRetirement {
  /** The retired queues with their parking queues and tiers. */
  readonly retired: ScopeQueue[] = [];
  private movers: QueueConsumer[] = [];
  /** The retired partitions deleted while their mover ran, looked for again while an instance that runs them is heard. */
  private readonly watch = new RetiredPartitionWatch();
  private looking?: Promise<void>;
  private stopped = false;
  private readonly names: ReturnType<typeof partitionNames>;
  private readonly partitions: NonNullable<HandlerConfig['partitions']>;

  constructor(
    private readonly handler: EngineHandler,
    private readonly deps: HandlerRuntimeDeps,
  ) {
    this.names = partitionNames(handler.config.queue);
    this.partitions = handler.config.partitions as NonNullable<HandlerConfig['partitions']>;
  }

  private get queue(): string {
    return this.handler.config.queue;
  }

  /** Finds what an earlier layout left, cuts it off and starts moving it (consumed from start()). */
  async prepare(): Promise<void> {
    await this.retireExtraPartitions();
    await this.retireUnpartitionedQueue();
  }

  /** Starts (or, after a reconnection, resumes) the movers. */
  async start(): Promise<void> {
    await Promise.all(this.movers.map((m) => m.start()));
  }

  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    await this.looking;
    await Promise.all(this.movers.map((m) => m.stop(timeoutMs)));
  }

  /**
   * Each heartbeat, the members heard: looks for the retired partitions deleted meanwhile that one of them may have
   * declared again (core/partitions/retired-partition.watch.ts says when), one passive check at a time.
   */
  lookAgain(members: readonly PartitionMember[]): void {
    if (this.watch.size === 0 || this.looking || this.stopped || !this.deps.connection.isConnected) return;
    const due = this.watch.heard(members, Date.now());
    if (due.length > 0) this.looking = this.lookFor(due).finally(() => (this.looking = undefined));
  }

  /** A retired partition found again is cut off the hash exchange again, and a new mover moves what reaches it. */
  private async lookFor(indexes: readonly number[]): Promise<void> {
    const { connection, logger } = this.deps;
    for (const index of indexes) {
      const queue = this.names.partition(index);
      let exists: boolean;
      try {
        exists = await queueExists(() => connection.createChannel(`queue "${queue}" check`, true), queue);
      } catch {
        this.watch.unsure(index);
        continue;
      }
      if (!exists || this.stopped) continue;
      this.watch.found(index);
      await onChannel(connection, `partition "${queue}" unbind`, (c) => c.unbindQueue(queue, this.names.hashExchange, PARTITION_WEIGHT), true).catch(
        () => undefined,
      );
      logger.warn(
        `"${this.queue}": partition queue "${queue}" beyond partitions.count (${this.partitions.count}) was declared again (by an instance that runs it); it is cut off the hash exchange again, and what it holds moves to the partitions of the new count. Delete it and its tiers once empty and no instance runs it.`,
      );
      await this.moveOut(queue, index)
        .start()
        .catch((error: unknown) =>
          logger.warn(`"${queue}": could not start moving its messages (${errorMessage(error)}); tried again on reconnection`),
        );
    }
  }

  /** Partitions beyond `count` (an earlier, larger count) are cut from the hash exchange, and what they hold moves out. */
  private async retireExtraPartitions(): Promise<void> {
    const { connection, logger } = this.deps;
    const { count } = this.partitions;
    for (let index = count, missingInARow = 0; searchesRetired(index, missingInARow); index++) {
      const queue = this.names.partition(index);
      const retired = this.retiredPartition(index);
      const channel = await connection.createChannel('partition check', true);
      let depth: number;
      try {
        depth = (await channel.checkQueue(queue)).messageCount;
        await channel.unbindQueue(queue, this.names.hashExchange, PARTITION_WEIGHT);
      } catch {
        // Gone, unless its parking queue is left; a few numbers in a row with neither end the search (searchesRetired).
        const parked = await queueExists(() => connection.createChannel('partition check', true), retired.errorQueue);
        missingInARow = parked ? 0 : missingInARow + 1;
        if (parked) this.retired.push(retired);
        continue;
      } finally {
        await channel.close().catch(() => undefined);
      }
      missingInARow = 0;
      this.retired.push(retired);
      logger.warn(
        `"${this.queue}": partition queue "${queue}" is beyond partitions.count (${count}); it gets no new messages, and its ${depth} message(s) (and any coming back from its tiers) move to the partitions of the new count. Delete it and its tiers once empty.`,
      );
      this.moveOut(queue, index);
    }
  }

  /** Partition `index` beyond the count (its parking queue and tiers as partition `index` would have them), for the scope. */
  private retiredPartition(index: number): ScopeQueue {
    const { handler } = this;
    const config = partitionConfigs({ ...handler.config, partitions: { ...this.partitions, count: index + 1 } })[index];
    return { queue: config.queue, errorQueue: config.errorQueue, tiers: scheduleTiers({ ...handler, ...handler.forPartition?.(config), config }) };
  }

  /**
   * The queue of the handler before partitions: cut from the handler's exchange, which would otherwise copy every
   * message into it for nobody, and moved out like a retired partition. A message published during the start may reach
   * both (handled twice, never lost); order across the change holds only for what was published after it.
   */
  private async retireUnpartitionedQueue(): Promise<void> {
    const { connection, logger } = this.deps;
    const upstream = partitionConfigs(this.handler.config)[0]?.upstream;
    const channel = await connection.createChannel('unpartitioned queue check', true);
    let depth: number;
    try {
      depth = (await channel.checkQueue(this.queue)).messageCount;
    } catch {
      await channel.close().catch(() => undefined);
      return; // no such queue: nothing to take over
    }
    let unbound = '';
    try {
      for (const key of upstream?.routingKeys ?? []) await channel.unbindQueue(this.queue, upstream!.exchange, key);
      if (upstream) unbound = `it no longer gets the messages of "${upstream.exchange}", and `;
    } catch (error) {
      unbound = `it could not be unbound from "${upstream?.exchange}" (${errorMessage(error)}): unbind it, or every message is handled twice; `;
    } finally {
      await channel.close().catch(() => undefined);
    }
    this.retired.push({ queue: this.queue, errorQueue: this.handler.config.errorQueue, tiers: scheduleTiers(this.handler) });
    logger.warn(
      `"${this.queue}": the queue "${this.queue}" of this handler before partitions exists; ${unbound}its ${depth} message(s) (and any coming back from its tiers) move to the partitions. Delete it and its tiers once empty.`,
    );
    this.moveOut(this.queue);
  }

  /**
   * Moves what `queue` holds, and whatever reaches it later (from its tiers, replays), into the hash exchange with the
   * key it was first published with, until the queue is deleted: then the mover ends instead of retrying forever.
   * `retiredIndex`: the queue is that partition beyond the count, which an instance still running the earlier count
   * binds to the hash exchange again when it reconnects; the hash exchange would then send the moved messages straight
   * back, round and round. So before a move it is cut off again, once a second at most (a message may go round for
   * that second, not for ever). Deleted, such an instance may declare it again: it is watched for (lookAgain).
   */
  private moveOut(queue: string, retiredIndex?: number): QueueConsumer {
    const retiredPartition = retiredIndex !== undefined;
    const { connection, logger, resume, recordPublisher } = this.deps;
    const hashExchange = this.names.hashExchange;
    let unboundAt = 0;
    const unbindAgain = async () => {
      if (!retiredPartition || Date.now() - unboundAt < REBIND_CHECK_MS) return;
      unboundAt = Date.now();
      await onChannel(connection, `partition "${queue}" unbind`, (channel) => channel.unbindQueue(queue, hashExchange, PARTITION_WEIGHT), true).catch(
        () => undefined,
      );
    };
    const redeclare = async () => {
      if (await queueExists(() => connection.createChannel(`queue "${queue}" check`, true), queue)) return;
      this.movers = this.movers.filter((m) => m !== mover);
      await mover.stop(0);
      if (retiredIndex === undefined) return logger.log(`"${queue}" was deleted: nothing more to move from it`);
      this.watch.lost(retiredIndex);
      logger.log(
        `"${queue}" was deleted: nothing more to move from it; looked for again (every ${RETIRED_LOOK_MS / 1_000} s at most) while an instance that runs it, and so may declare it again, is heard`,
      );
    };
    const mover: QueueConsumer = new QueueConsumer({ queue, prefetch: 20, connection, logger, resume, redeclare }, async (message, settle) => {
      try {
        await unbindAgain();
        await recordPublisher.publish(hashExchange, movedRoutingKey(message, queue), message.content, movedProperties(message.properties));
        settle.ack();
      } catch (error) {
        logger.warn(`"${queue}": could not move a message to "${hashExchange}" (${errorMessage(error)}); it stays, tried again in 1 s`);
        await sleep(1_000);
        settle.nack(true);
      }
    });
    this.movers.push(mover);
    return mover;
  }
}
