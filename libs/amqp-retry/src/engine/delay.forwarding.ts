import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { recordOrWarn } from '../amqp/handler-registry.writer.js';
import { QueueConsumer } from '../amqp/queue.consumer.js';
import { queueExists } from '../amqp/queue-exists.probe.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import { planDelayTopology, type DelayTopology } from '../core/delivery/delay.plan.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { DelayForwardHandler } from '../pipeline/delay.forwarder.js';
import type { MessageParker } from '../pipeline/park-route.steps.js';
import type { PublishingSide } from './publishing.side.js';

/** Due delayed messages in flight at once in the forwarder: enough for thousands a second over a few ms of confirms. */
const FORWARDER_PREFETCH = 100;

/** Makes the consumer that forwards what is due in a ladder's ready queue. */
type ForwarderOf = (ladder: DelayTopology, redeclare: () => Promise<unknown>, observers?: ObserverHub, onDelivery?: () => void) => QueueConsumer;

/**
 * The consuming half of delayed delivery: the forwarder of the delay ladder's ready queue, and the drain of the ladder
 * of the other queue type left by an earlier configuration.
 */
export class DelayForwarding {
  private forwarder?: QueueConsumer;
  private drain?: QueueConsumer;

  constructor(
    private readonly config: ModuleConfig,
    private readonly publishing: PublishingSide,
    private readonly logger: RetryLogger,
    private readonly observers: ObserverHub,
  ) {}

  /** The forwarder's consumer, once prepared. */
  get consumer(): QueueConsumer | undefined {
    return this.forwarder;
  }

  /** Declares the ladder and makes its forwarder (not consuming yet); nothing when delayed delivery is off. */
  async prepare(connection: AmqpConnection, parker: MessageParker): Promise<void> {
    const ladder = await this.publishing.delayLadder();
    if (!ladder) return;
    const { forwarder } = await this.publishing.open();
    const redeclare = () => (this.publishing.forgetLadder(), this.publishing.delayLadder());
    // The ladder parks what it cannot deliver; a replay sends it back to the ready queue, whose forwarder retries.
    // Both forwarders give what a target refuses back to this ladder: the other one is to be drained, then deleted.
    const { application, reconnect: resume } = this.config;
    const entry = { queue: ladder.readyQueue, errorQueue: ladder.errorQueue, tiers: [], queueType: ladder.queueType, application };
    await recordOrWarn(() => connection.createChannel('handler registry', true), parker.publisher, entry, this.logger);
    const park = { errorQueue: ladder.errorQueue, redeclare };
    const { logger, observers } = this;
    const forwarderOf: ForwarderOf = (from, redeclareFrom, observing, onDelivery) => {
      const { handle } = new DelayForwardHandler(from, forwarder, parker, park, logger, observing, ladder.prefix);
      return new QueueConsumer(
        { queue: from.readyQueue, prefetch: FORWARDER_PREFETCH, connection, logger, resume, redeclare: redeclareFrom, observers: observing },
        onDelivery ? (message, settle, signal) => (onDelivery(), handle(message, settle, signal)) : handle,
      );
    };
    // Due messages arriving tell that the ladder is in use: its check (which another application's publishes may not
    // make) runs as they do, at most once an interval.
    this.forwarder = forwarderOf(ladder, redeclare, observers, () => this.publishing.checkLadderSoon());
    this.drain = await this.drainOf(ladder, connection, forwarderOf);
  }

  /**
   * A forwarder for the ladder of the other queue type under the same prefix: it holds delayed messages published before
   * the queue type changed, which nothing else would forward once due. It runs until that ladder is deleted; nothing is
   * declared for it. Undefined when there is none, or when the check failed (a warning says so: start-up goes on).
   */
  private async drainOf(ladder: DelayTopology, connection: AmqpConnection, forwarderOf: ForwarderOf): Promise<QueueConsumer | undefined> {
    const other = planDelayTopology(this.config.delayPrefix as string, ladder.queueType === 'quorum' ? 'classic' : 'quorum');
    const { logger } = this;
    const open = () => connection.createChannel('delay ladder check', true);
    const found = await queueExists(open, other.readyQueue).catch((error: unknown) => {
      logger.warn(`Could not check for a ${other.queueType} delay ladder "${other.prefix}" (${errorMessage(error)}); not forwarding from one`);
      return false;
    });
    if (!found) return undefined;
    let stopped = false;
    const stillThere = async () => {
      if (await queueExists(open, other.readyQueue)) return;
      const gone = `The ${other.queueType} delay ladder "${other.prefix}" was deleted; no longer forwarding from it`;
      if (!stopped) logger.log(gone);
      stopped = true;
      void consumer.stop(0);
      throw new Error(gone);
    };
    const consumer = forwarderOf(other, stillThere);
    logger.log(
      `Found a ${other.queueType} delay ladder "${other.prefix}" beside this ${ladder.queueType} one: forwarding what is due in it as well ` +
        '(delayed under an earlier configuration, or by another application); delete it once empty and unused',
    );
    return consumer;
  }

  async start(): Promise<void> {
    if (!this.forwarder) return;
    await this.forwarder.start();
    this.logger.log(`Forwarding due delayed messages from "${this.forwarder.queue}"`);
    // Best effort: an old ladder deleted since prepare(), or one this user may not read, never stops the start.
    await this.drain?.start().catch((error: unknown) => this.logger.warn(`Could not forward from the other delay ladder: ${errorMessage(error)}`));
  }

  /** After a reconnection: the ladder declared again, the forwarder consuming; the old ladder's drain best effort. */
  resume(): Promise<void> | undefined {
    const forwarding = this.forwarder && this.publishing.delayLadder().then(() => this.forwarder?.start());
    // An old ladder's forwarder stops by itself once that ladder is gone; it never holds the recovery back.
    void Promise.resolve(forwarding)
      .catch(() => undefined)
      .then(() => this.drain?.start())
      .catch(() => undefined);
    return forwarding;
  }

  async stop(timeoutMs: number): Promise<void> {
    const { forwarder, drain } = this;
    this.forwarder = undefined;
    this.drain = undefined;
    await Promise.all([forwarder?.stop(timeoutMs), drain?.stop(timeoutMs)]);
  }
}
