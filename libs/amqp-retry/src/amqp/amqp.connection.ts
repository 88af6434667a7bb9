import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { Channel, ChannelModel, ConfirmChannel } from 'amqplib';
import { connectWithin } from './broker.connector.js';
import { holdChannelNumbersUntilFlushed } from './channel-numbers.guard.js';
import { coalesceSocketWrites } from './socket-writes.coalescer.js';
import { sleep, startTimer } from '../core/time/duration.timer.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { brokerUser, describeNode, nodeForAttempt } from '../core/config/broker-urls.reader.js';
import { reconnectDelay, type ReconnectPolicy } from '../core/connection/reconnect.policy.js';
import { NotConnectedError } from '../errors/not-connected.error.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import { brokerVersionWarning } from '../core/config/broker-version.check.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import { closeSettled, withSettledClose } from './channel-close.settler.js';

export interface AmqpConnectionOptions {
  /** One broker, or the nodes of a cluster (tried as `open` and `reconnect` say). */
  urls: readonly string[];
  /** Shown in the broker's management UI and `rabbitmqctl list_connections`. */
  name: string;
  reconnect: ReconnectPolicy;
  /** How long one attempt to connect may take, TCP and AMQP handshake together. */
  connectTimeoutMs: number;
  /** Told of losses and recoveries, as the connection of this role. */
  observers?: ObserverHub;
  role?: 'consume' | 'publish';
}

type Listener = () => Promise<void>;

/** The losses of a connection: how many, and the last one's reason and the broker's close code (none for a lost socket). */
export interface ConnectionLoss {
  count: number;
  reason?: string;
  code?: number;
}

/**
 * The application's AMQP connection, kept alive: when dropped, it reconnects with capped exponential backoff and
 * jitter (failing over across a cluster's nodes), then runs the `onReconnect` listeners. Every channel gets an 'error'
 * listener: without one, a channel closed by the broker (a 406, a 404) would tear down the whole connection.
 */
export class AmqpConnection {
  private model?: ChannelModel;
  private closing = false;
  private readonly reconnectListeners: Listener[] = [];
  private readonly waiters = new Set<() => void>();
  private cancelWait?: () => void;
  /** The index in `options.urls` of the node this connection is, or was last, on. */
  private nodeIndex = 0;
  /** Whether the warning that amqplib's internals differ was logged (once per connection). */
  private saidInternals = false;
  private loss: ConnectionLoss = { count: 0 };

  private constructor(
    private readonly options: AmqpConnectionOptions,
    private readonly logger: RetryLogger,
  ) {}

  /** Connects to the first node that answers, each tried once; else rejects at once (start-up fails loudly), naming every node and why. */
  static async open(options: AmqpConnectionOptions, logger: RetryLogger): Promise<AmqpConnection> {
    if (options.urls.length === 0) throw new Error('No RabbitMQ URL to connect to');
    const connection = new AmqpConnection(options, logger);
    const failures: string[] = [];
    for (let index = 0; index < options.urls.length; index++) {
      try {
        connection.attach(await connection.connect(index));
        connection.notify('connectionUp', {});
        if (options.urls.length > 1) logger.log(`Connected to RabbitMQ at ${describeNode(options.urls, index)}: ${options.name}`);
        return connection;
      } catch (error) {
        failures.push(`${describeNode(options.urls, index)}: ${errorMessage(error)}`);
        if (options.urls.length === 1) throw new Error(`Could not connect to RabbitMQ at ${failures[0]}`, { cause: error });
      }
    }
    throw new Error(`Could not connect to any of ${options.urls.length} RabbitMQ nodes: ${failures.join('; ')}`);
  }

  /** The broker user of the node it is, or was last, on: the only `userId` the broker takes on its publishes. */
  get user(): string {
    return brokerUser(this.options.urls[this.nodeIndex]);
  }

  get isConnected(): boolean {
    return this.model !== undefined;
  }

  /** What the broker said of itself (product, version), for version checks. */
  get serverProperties(): Record<string, unknown> | undefined {
    return this.model?.connection.serverProperties as Record<string, unknown> | undefined;
  }

  /** The negotiated channel_max, or undefined while it is down. */
  get channelMax(): number | undefined {
    return (this.model?.connection as { channelMax?: number } | undefined)?.channelMax;
  }

  /** How many times this connection was lost so far, and why the last time. */
  get lastLoss(): ConnectionLoss {
    return this.loss;
  }

  /** Runs after every reconnection, in registration order; a listener's failure is logged, not thrown. */
  onReconnect(listener: Listener): void {
    this.reconnectListeners.push(listener);
  }

  /** Resolves when connected; rejects with NotConnectedError after `timeoutMs`, or on close. `limitMs`: the limit the error names. */
  whenConnected(timeoutMs: number, limitMs = timeoutMs): Promise<void> {
    if (this.model) return Promise.resolve();
    if (this.closing) return Promise.reject(new NotConnectedError('the connection is closed'));
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        timer.cancel();
        this.waiters.delete(done);
        if (this.model) resolve();
        else reject(new NotConnectedError('the connection is closed'));
      };
      const timer = startTimer(timeoutMs, () => {
        this.waiters.delete(done);
        reject(new NotConnectedError(`no connection to RabbitMQ within ${limitMs} ms`));
      });
      this.waiters.add(done);
    });
  }

  /** `expectClose`: the caller provokes a broker close (a passive declare that may 404), so it is not logged. */
  async createChannel(purpose: string, expectClose = false): Promise<Channel> {
    return this.keepConnection(await this.current().createChannel(), purpose).on('error', (error: Error) => {
      if (!expectClose) this.logger.error(`AMQP channel for ${purpose} closed by the broker: ${error.message}`);
    });
  }

  /** Not logged: confirm channels report their failures through the publishes they fail. */
  async createConfirmChannel(): Promise<ConfirmChannel> {
    return this.keepConnection(await this.current().createConfirmChannel(), 'publishing').on('error', () => undefined);
  }

  /**
   * The channel with a `close()` that settles (channel-close.settler.ts) and a 'handler-error' listener: amqplib throws
   * what a channel's listeners throw (a consumer callback, its `Unknown consumer`) into the connection, which then
   * closes with every other channel; with a 'handler-error' listener it hands them there instead.
   */
  private keepConnection<T extends Channel>(channel: T, purpose: string): T {
    channel.on('handler-error', (error: unknown, event: string) =>
      this.logger.error(`AMQP channel for ${purpose}: a "${event}" event failed (${errorMessage(error)}); the connection stays up`),
    );
    return withSettledClose(channel);
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.cancelWait?.();
    this.wakeWaiters();
    const model = this.model;
    this.model = undefined;
    if (!model) return; // down (connectionLost said so) or never up
    await closeSettled(model).catch(() => undefined); // already closed: nothing left to release
    this.notify('connectionClosed', {});
  }

  private current(): ChannelModel {
    if (!this.model) throw new NotConnectedError(this.closing ? 'the connection is closed' : 'the connection to RabbitMQ is down; reconnecting');
    return this.model;
  }

  /** Nagle's algorithm off: with it, each small frame waits for the next packet (docs/design.md section 6: a retry 60 ms late, not 12). */
  private async connect(index: number): Promise<ChannelModel> {
    const { name, connectTimeoutMs } = this.options;
    const timeoutText = `no answer within ${connectTimeoutMs} ms (connectTimeout)`;
    const model = await connectWithin(this.options.urls[index], connectTimeoutMs, timeoutText, {
      noDelay: true,
      clientProperties: { connection_name: name },
    });
    try {
      this.fitInternals(model);
    } catch (error) {
      // A logger of the application's that throws (or amqplib's internals that do) must not leave the socket open.
      void model.close().catch(() => undefined);
      throw error;
    }
    this.nodeIndex = index;
    return model;
  }

  /** Adapts amqplib's internals (channel-numbers.guard.ts, socket-writes.coalescer.ts); where they differ, says so once. */
  private fitInternals(model: ChannelModel): void {
    const missing = [
      !holdChannelNumbersUntilFlushed(model) &&
        `a channel reopened while the link to the broker is slow may make RabbitMQ close the connection (504 "second 'channel.open' seen")`,
      !coalesceSocketWrites(model) && 'frames go out one socket write each, which costs CPU, not correctness',
    ].filter((text): text is string => typeof text === 'string');
    if (missing.length === 0 || this.saidInternals) return;
    this.saidInternals = true;
    this.logger.warn(
      `${this.options.name}: this amqplib's internals are not the ones nestjs-amqp-retry knows (amqplib 0.10 to 2.x): ${missing.join('; ')}`,
    );
  }

  private attach(model: ChannelModel): void {
    let lastError: { message: string; code?: unknown } | undefined;
    model.on('error', (error: Error) => (lastError = error)); // the 'close' that follows reports it
    model.on('blocked', (reason: string) => this.logger.warn(`RabbitMQ blocks publishing on this connection: ${reason}`));
    model.on('unblocked', () => this.logger.log('RabbitMQ unblocked publishing on this connection'));
    model.on('close', (error?: Error) => {
      if (this.model !== model) return;
      this.model = undefined;
      if (this.closing) return;
      const reason = error?.message ?? lastError?.message ?? 'the socket closed';
      const code = lastError?.code ?? (error as { code?: unknown } | undefined)?.code;
      this.loss = { count: this.loss.count + 1, reason, code: typeof code === 'number' ? code : undefined };
      this.logger.error(`Lost the connection to RabbitMQ at ${describeNode(this.options.urls, this.nodeIndex)} (${reason}); reconnecting`);
      this.notify('connectionLost', { reason });
      void this.reconnect();
    });
    this.model = model;
    this.wakeWaiters();
  }

  /** Attempt n goes to the n-th node after the lost one (survivors first), each after the backoff delay: a cluster down is not hammered. */
  private async reconnect(): Promise<void> {
    const started = Date.now();
    const lost = this.nodeIndex;
    for (let attempt = 1; !this.closing; attempt++) {
      await this.sleep(reconnectDelay(attempt, this.options.reconnect));
      if (this.closing) return;
      const index = nodeForAttempt(lost, attempt, this.options.urls.length);
      const model = await this.connect(index).catch((error: unknown) => {
        this.logger.debug(`Reconnection attempt ${attempt} to ${describeNode(this.options.urls, index)} failed: ${errorMessage(error)}`);
      });
      if (!model) continue;
      if (this.closing) {
        await model.close().catch(() => undefined);
        return;
      }
      this.attach(model);
      const downMs = Date.now() - started;
      this.logger.log(
        `Reconnected to RabbitMQ at ${describeNode(this.options.urls, index)} after ${downMs} ms (${attempt} attempt${attempt > 1 ? 's' : ''})`,
      );
      this.notify('connectionUp', { downMs });
      await this.recover(model);
      return;
    }
  }

  /**
   * Runs the (idempotent) reconnect listeners until they all succeed, with backoff, while this connection lives: a
   * broker that has just restarted may refuse a declaration for a moment.
   */
  private async recover(model: ChannelModel): Promise<void> {
    for (let attempt = 1; this.model === model && !this.closing; attempt++) {
      try {
        for (const listener of this.reconnectListeners) await listener();
        return;
      } catch (error) {
        const delay = reconnectDelay(attempt, this.options.reconnect);
        this.logger.error(`Recovery after reconnecting failed (${errorMessage(error)}); trying again in ${delay} ms`);
        await this.sleep(delay);
      }
    }
  }

  /** A wait that close() cuts short, so that shutting down never waits for a reconnection delay. */
  private sleep(ms: number): Promise<void> {
    const cut = new AbortController();
    this.cancelWait = () => cut.abort();
    return sleep(ms, { signal: cut.signal });
  }

  private notify(name: 'connectionLost' | 'connectionUp' | 'connectionClosed', event: { reason?: string; downMs?: number }): void {
    const { observers, role } = this.options;
    if (observers?.active && role) observers.emit(name, { role, ...event });
  }

  private wakeWaiters(): void {
    for (const wake of [...this.waiters]) wake();
  }
}

/** What opening a connection takes of the module's settings. */
export type ConnectionSettings = Pick<ModuleConfig, 'urls' | 'reconnect' | 'connectTimeoutMs' | 'connectionName'>;

/**
 * Opens an AMQP connection with the module's settings; the publishing one warns about a broker version known to lose
 * messages. 'replies': the reply-address probes' connection (engine/reply-address.checker.ts), not observed.
 */
export async function openConnection(
  config: ConnectionSettings,
  role: 'consume' | 'publish' | 'replies',
  logger: RetryLogger,
  observers?: ObserverHub,
): Promise<AmqpConnection> {
  const { urls, reconnect, connectTimeoutMs, connectionName } = config;
  const name = `${connectionName ?? `nestjs-amqp-retry (pid ${process.pid})`} ${role}`;
  const observed = role === 'replies' ? {} : { observers, role };
  const connection = await AmqpConnection.open({ urls, reconnect, name, connectTimeoutMs, ...observed }, logger);
  const warning = role === 'publish' ? brokerVersionWarning(connection.serverProperties) : undefined; // every engine opens this one
  if (warning) logger.warn(warning);
  return connection;
}
