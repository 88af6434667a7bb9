import { AsyncLocalStorage } from 'node:async_hooks';
import type { Channel, ConfirmChannel, GetMessage } from 'amqplib';
import { AmqpConnection, type ConnectionSettings } from '../amqp/amqp.connection.js';
import { CLOSE_WAIT_MS } from '../amqp/channel-close.settler.js';
import { SILENT_LOGGER } from '../core/observe/retry.logger.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { withinTime } from '../core/time/duration.timer.js';
import { NotConnectedError } from '../errors/not-connected.error.js';
import { NotAParkingQueueError } from '../errors/not-a-parking-queue.error.js';
import { browseParked, type BrowsedMessage } from './parked-queue.browser.js';

/** Shown in the broker's management UI and `rabbitmqctl list_connections`. */
const CONNECTION_NAME = 'amqp-retry parked messages';
/** Longest wait for a parking queue to take back a walk's messages (someone else may be consuming it). */
const GIVE_BACK_MS = 3000;

/** What instances made from one another share: the connection, and the order of the walks of each parking queue. */
export interface Session {
  connection?: Promise<AmqpConnection>;
  /** How often close() ran: a call that began before the last one may not open the connection again. */
  closes: number;
  readonly locks: Map<string, Promise<unknown>>;
  /** The calls running now, each ended by close() with NotConnectedError (see during). */
  readonly running: Set<(error: Error) => void>;
}

/** A fresh session: no connection yet, no walk, no call. */
export const newSession = (): Session => ({ locks: new Map(), closes: 0, running: new Set() });

/** A walk's channel, and the ack to use on it (counted, to know how many messages should come back). */
export interface Walk {
  channel: ConfirmChannel;
  ack(message: GetMessage): void;
  /** The broker's reason, once it closed the channel (a 403 ACCESS_REFUSED of a publish): amqplib's later errors only say "closed". */
  closedBy?: Error;
}

/** What a walk runs over its parking queue's messages (see ParkedConnection.walk). */
export type WalkWork<T> = (messages: AsyncGenerator<BrowsedMessage>, walk: Walk) => Promise<T>;

export function settle(walk: Walk, browsed: BrowsedMessage): void {
  walk.ack(browsed.message);
  browsed.settled = true;
}

/** The connection of a ParkedMessages and of the views made from it, and the walks of its parking queues. */
export class ParkedConnection {
  /** The session's close count when the public call now running began (see during). */
  private readonly calls = new AsyncLocalStorage<number>();

  constructor(
    readonly session: Session,
    /** The broker settings: the module's, or the options' read as the module reads its own. */
    private readonly settings: () => Omit<ConnectionSettings, 'connectionName'>,
    /** The handler queue that parks in a parking queue when only one does (the target of copies without x-original-queue). */
    private readonly fallbackQueue: (errorQueue: string) => Promise<string>,
  ) {}

  /** See ParkedMessages.close. */
  async close(): Promise<void> {
    this.session.closes++;
    // A call in flight ends now, whatever it waits for: a confirm or a reply that the closed connection will never
    // bring would otherwise leave its caller (a page request that Nest's HTTP server waits for at app.close()) hanging.
    // What it had taken unacked goes back to its queue with the connection: nothing is lost. Its queue's turn is free.
    const ended = new NotConnectedError('ParkedMessages was closed during this call');
    for (const end of [...this.session.running]) end(ended);
    this.session.locks.clear();
    const connection = this.session.connection;
    this.session.connection = undefined;
    // One still opening (a broker that does not answer) is closed once it opens, or fails within connectTimeout:
    // close() waits for that at most CLOSE_WAIT_MS, so that a shutdown never waits for a connect.
    const closed = connection?.then((opened) => opened.close()).catch(() => undefined);
    if (closed) await withinTime(closed, CLOSE_WAIT_MS, () => new Error('still connecting')).catch(() => undefined);
  }

  /**
   * Opened on first use (or by ParkedMessages.connect) and kept while this instance is open; a failed open is tried
   * again by the next call. Nothing is logged: a failure reaches the caller through the call that fails.
   */
  connection(): Promise<AmqpConnection> {
    const { session } = this;
    if (session.connection) return session.connection;
    const began = this.calls.getStore();
    if (began !== undefined && began !== session.closes) {
      // A call in flight when close() came (a page request during app.close()) would open a connection that nobody
      // closes, and the process would not exit: it fails instead. A call made after close() opens a new one.
      return Promise.reject(new NotConnectedError('ParkedMessages was closed during this call'));
    }
    const opening = AmqpConnection.open({ ...this.settings(), name: CONNECTION_NAME }, SILENT_LOGGER).catch((error: unknown) => {
      if (session.connection === opening) session.connection = undefined;
      throw error;
    });
    session.connection = opening;
    return opening;
  }

  /** Runs a public call, remembering the close count it began with (connection() reads it); one inside another keeps the outer's. */
  during<T>(call: () => Promise<T>): Promise<T> {
    if (this.calls.getStore() !== undefined) return call();
    const { running } = this.session;
    return new Promise<T>((resolve, reject) => {
      running.add(reject);
      this.calls
        .run(this.session.closes, call)
        .then(resolve, reject)
        .finally(() => running.delete(reject));
    });
  }

  /** The connection once it is up: a call made while it reconnects waits for it, at most the connect timeout. */
  async connected(): Promise<AmqpConnection> {
    const connection = await this.connection();
    await connection.whenConnected(this.settings().connectTimeoutMs);
    return connection;
  }

  /** A broker close of one of these channels (a 404 of a passive declare) is expected, and reported by its call. */
  async channel(): Promise<Channel> {
    return (await this.connected()).createChannel('parked messages', true);
  }

  /** Ready messages and consumers of a queue; -1 and undefined when it does not exist (a passive declare on a channel of its own). */
  async stats(queue: string): Promise<{ messages: number; consumers?: number }> {
    const channel = await this.channel();
    try {
      const { messageCount, consumerCount } = await channel.checkQueue(queue);
      return { messages: messageCount, consumers: consumerCount };
    } catch {
      return { messages: -1 };
    } finally {
      await channel.close().catch(() => undefined);
    }
  }

  /**
   * Runs `work` over a walk of one parking queue on a confirm channel of its own, one walk per queue at a time in
   * this instance; closing the channel afterwards gives back every message not acked.
   */
  async walk<T>(errorQueue: string, work: WalkWork<T>, onProgress?: (done: number, total: number) => void): Promise<T> {
    const { locks } = this.session;
    const before = locks.get(errorQueue) ?? Promise.resolve();
    const run = before.then(async () => {
      const fallback = await this.fallbackQueue(errorQueue);
      const channel = await (await this.connected()).createConfirmChannel();
      let acked = 0;
      let held = 0;
      try {
        const { messageCount, consumerCount } = await channel.checkQueue(errorQueue).catch((error: unknown) => {
          throw new Error(`The parking queue "${errorQueue}" does not exist (${errorMessage(error)})`);
        });
        // Nothing of the library consumes a parking queue: one with consumers is a live queue named by mistake, and a
        // walk would hold its messages from them (and a purge or a replay take them).
        if (consumerCount > 0) throw new NotAParkingQueueError(errorQueue, `a queue with ${consumerCount} consumer(s)`);
        held = messageCount;
        const walk: Walk = { channel, ack: (message) => (channel.ack(message), acked++) };
        channel.on('error', (error: Error) => (walk.closedBy ??= error));
        return await work(browseParked(channel, errorQueue, fallback, onProgress), walk).catch((error: unknown) => {
          const reason = walk.closedBy?.message;
          if (reason === undefined || errorMessage(error).includes(reason)) throw error;
          throw new Error(`${errorMessage(error)}; the broker closed the channel: ${reason}`, { cause: error });
        });
      } finally {
        await channel.close().catch(() => undefined);
        await this.untilGivenBack(errorQueue, held - acked);
      }
    });
    const settled = run.catch(() => undefined);
    locks.set(errorQueue, settled);
    void settled.then(() => {
      if (locks.get(errorQueue) === settled) locks.delete(errorQueue);
    });
    return run;
  }

  /**
   * Waits (up to GIVE_BACK_MS) until the parking queue holds `expected` ready messages again. A quorum queue takes
   * back a closed channel's messages asynchronously: a walk started at once would miss those not back yet.
   */
  private async untilGivenBack(errorQueue: string, expected: number): Promise<void> {
    const deadline = Date.now() + GIVE_BACK_MS;
    while (expected > 0 && Date.now() < deadline) {
      if ((await this.stats(errorQueue)).messages >= expected) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}
