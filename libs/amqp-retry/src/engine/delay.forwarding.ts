import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { recordOrWarn } from '../amqp/handler-registry.writer.js';
import { QueueConsumer } from '../amqp/queue.consumer.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { DelayForwardHandler } from '../pipeline/delay.forwarder.js';
import type { MessageParker } from '../pipeline/park-route.steps.js';
import { drainOtherLadder } from './ladder.drain.js';
import type { PublishingSide } from './publishing.side.js';

/** Due delayed messages in flight at once in the forwarder: enough for thousands a second over a few ms of confirms. */
const FORWARDER_PREFETCH = 100;

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
    const { application, reconnect: resume } = this.config;
    const entry = { queue: ladder.readyQueue, errorQueue: ladder.errorQueue, tiers: [], queueType: ladder.queueType, application };
    await recordOrWarn(() => connection.createChannel('handler registry', true), parker.publisher, entry, this.logger);
    const park = { errorQueue: ladder.errorQueue, redeclare };
    const { logger, observers } = this;
    const forward = new DelayForwardHandler(ladder, forwarder, parker, park, logger, observers);
    this.forwarder = new QueueConsumer(
      { queue: ladder.readyQueue, prefetch: FORWARDER_PREFETCH, connection, logger, resume, redeclare, observers },
      forward.handle,
    );
    const drainDeps = { connection, forwarder, parker, park, logger, resume, prefetch: FORWARDER_PREFETCH };
    this.drain = await drainOtherLadder(ladder, this.config.delayPrefix as string, drainDeps);
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
