import { openConnection, type AmqpConnection } from '../amqp/amqp.connection.js';
import { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import { declareTopology } from '../amqp/topology.declarer.js';
import { planDelayTopology, type DelayTopology } from '../core/delivery/delay.plan.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { NotConnectedError } from '../errors/not-connected.error.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';

/** The publishing connection's confirm channels, one per purpose. */
export interface Publishers {
  connection: AmqpConnection;
  /** For the application's own publishes: a publish to a missing exchange never disturbs parking. */
  publisher: ConfirmPublisher;
  /** For parked copies and plan records. */
  parker: ConfirmPublisher;
  /** For the delay forwarder, whose targets may have been deleted since the message was delayed. */
  forwarder: ConfirmPublisher;
  /** For the outbox relay: a row the broker refuses never disturbs the application's publishes. */
  relay: ConfirmPublisher;
}

/** The confirm channels a publish of the engine may go on. */
export type PublisherRole = 'publisher' | 'relay';

/**
 * The publishing half of the engine: a connection of its own, so that a broker that blocks publishers (a memory or
 * disk alarm blocks every connection that publishes, acks included) never stops the consumers. It opens on first use
 * and, once closed, refuses to open again: a publish after shutdown fails instead of leaving a connection behind.
 */
export class PublishingSide {
  private opened?: Promise<Publishers>;
  /** The publishers once `opened` resolved: the usual publish takes them without awaiting a promise. */
  private openedNow?: Publishers;
  private ladder?: Promise<DelayTopology>;
  private closed = false;

  constructor(
    private readonly config: ModuleConfig,
    private readonly logger: RetryLogger,
    private readonly observers?: ObserverHub,
  ) {}

  /** Whether the publishing connection is up; undefined before it first opened. */
  get isConnected(): boolean | undefined {
    return this.connection?.isConnected;
  }

  private connection?: AmqpConnection;

  open(): Promise<Publishers> {
    if (this.closed) return Promise.reject(new NotConnectedError('the application has shut down'));
    this.opened ??= (async () => {
      const { publishTimeoutMs, publishBufferSize, confirmTimeoutMs } = this.config;
      const connection = await openConnection(this.config, 'publish', this.logger, this.observers);
      this.connection = connection;
      connection.onReconnect(async () => this.forgetLadder()); // the broker may have lost it
      const limits = { timeoutMs: publishTimeoutMs, bufferSize: publishBufferSize, confirmTimeoutMs };
      const publisher = () => new ConfirmPublisher(connection, limits);
      const opened: Publishers = { connection, publisher: publisher(), parker: publisher(), forwarder: publisher(), relay: publisher() };
      if (this.closed)
        await PublishingSide.shut(opened); // closed while connecting
      else this.openedNow = opened;
      return opened;
    })();
    const opening = this.opened;
    opening.catch(() => {
      if (this.opened === opening) this.opened = undefined; // a failed connect can be tried again
    });
    return opening;
  }

  /** The publishers if open now (no await), else undefined: then `open()`. */
  get openNow(): Publishers | undefined {
    return this.closed ? undefined : this.openedNow;
  }

  /**
   * The delay ladder, declared once per connection (again after a reconnection, or when a publish found part of it
   * deleted); undefined when delayed delivery is off.
   */
  delayLadder(): Promise<DelayTopology | undefined> {
    const prefix = this.config.delayPrefix;
    if (prefix === undefined) return Promise.resolve(undefined);
    if (this.ladder) return this.ladder;
    const declaring = this.open().then(async ({ connection }) => {
      const ladder = planDelayTopology(prefix, this.config.delayQueueType);
      await declareTopology(connection, ladder);
      return ladder;
    });
    this.ladder = declaring;
    declaring.catch(() => this.forgetLadder(declaring));
    return declaring;
  }

  /** Declares the ladder again on next use (all of it: declarations are idempotent). */
  forgetLadder(which?: Promise<DelayTopology>): void {
    if (which === undefined || this.ladder === which) this.ladder = undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    const opened = this.opened;
    this.opened = undefined;
    this.openedNow = undefined;
    this.ladder = undefined;
    const o = await opened?.catch(() => undefined);
    if (o) await PublishingSide.shut(o);
  }

  private static async shut(o: Publishers): Promise<void> {
    await Promise.all([o.publisher.close(), o.parker.close(), o.forwarder.close(), o.relay.close()]);
    await o.connection.close();
  }
}
