import { AsyncLocalStorage } from 'node:async_hooks';
import type { Channel, ConfirmChannel, GetMessage } from 'amqplib';
import { AmqpConnection, type ConnectionSettings } from '../amqp/amqp.connection.js';
import { readHandlerRegistry } from '../amqp/handler-registry.writer.js';
import type { HandlerRecord } from '../core/topology/handler-registry.record.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { readBrokerUrls } from '../core/config/broker-urls.reader.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_RECONNECT } from '../core/config/module.config.js';
import { SILENT_LOGGER } from '../core/observe/retry.logger.js';
import {
  describeScope,
  mayUseParkingQueue,
  namesNothing,
  parkingQueueOf,
  queuesInScope,
  type ParkedScope,
  type ScopeQueue,
} from '../core/parking/parked.scope.js';
import { NotConnectedError } from '../errors/not-connected.error.js';
import { CLOSE_WAIT_MS } from '../amqp/channel-close.settler.js';
import { withinTime } from '../core/time/duration.timer.js';
import { ParkedScopeError } from '../errors/parked-scope.error.js';
import { matchesFilter, replayPublishOptions, summarize, toJsonLine } from '../core/parking/parked.view.js';
import { isDelayLadderQueue } from '../core/delivery/delay.plan.js';
import type { QueueActivity } from '../engine/engine.views.js';
import { ConfirmWindow } from './confirm.window.js';
import { ParkedHeader } from '../core/headers/header.names.js';
import { browseParked, publishToQueue, type BrowsedMessage } from './parked-queue.browser.js';
import type {
  EditReplayOptions,
  HandlerQueueState,
  OperationOptions,
  PageRequest,
  ParkedFilter,
  ParkedMessagesOptions,
  ParkedMessageView,
  ParkedPage,
  ParkedSelection,
  ParkedSummary,
  PurgeResult,
  ReplayResult,
} from '../core/parking/parked-messages.types.js';

const DEFAULT_PAGE = 50;
/** Shown in the broker's management UI and `rabbitmqctl list_connections`. */
const CONNECTION_NAME = 'amqp-retry parked messages';
/** Lines an export walks ahead of its reader. */
const EXPORT_BUFFER = 256;
/** Longest wait for a parking queue to take back a walk's messages (someone else may be consuming it). */
const GIVE_BACK_MS = 3000;

/** What instances made from one another share: the connection, and the order of the walks of each parking queue. */
interface Session {
  connection?: Promise<AmqpConnection>;
  /** How often close() ran: a call that began before the last one may not open the connection again. */
  closes: number;
  readonly locks: Map<string, Promise<unknown>>;
  /** The calls running now, each ended by close() with NotConnectedError (see during). */
  readonly running: Set<(error: Error) => void>;
}

/**
 * How RetryModule makes the instance it provides; not for applications. `own`: the queues the application's engine
 * runs, read at each call.
 */
export interface ParkedMessagesInternals {
  own?: () => readonly ScopeQueue[];
  /** The engine's live figures of its own queues (in flight, outcomes counted), for the page. */
  live?: () => readonly QueueActivity[];
  /** The module's broker settings (its URLs as read once, reconnection, connect timeout), instead of the options'. */
  broker?: Omit<ConnectionSettings, 'connectionName'>;
  session?: Session;
}

/**
 * Inspect, replay, purge and export the messages parked by the retry handlers. Usable without Nest
 * (`await ParkedMessages.connect({ url, application: 'orders-service' })`) and injectable where `RetryModule` is
 * imported. It opens a connection of its own on first use and finds the parking queues from the records running
 * handlers leave on the broker and from its options.
 *
 * It sees only its scope (ParkedMessagesOptions): the one RetryModule provides sees that application's handler
 * queues and delay ladder, `wholeVhost()` gives a view of every application's. A call that names a queue outside the
 * scope throws ParkedScopeError before it reads or changes anything.
 *
 * Browsing takes each message without acking it and gives it back (closing its channel): nothing is lost, copied or
 * reordered. A replay publishes a fresh copy to the queue the message failed in, waits for the broker's confirm, and
 * only then removes the parked one. Calls on one parking queue run one after the other within an instance (a walk
 * holds the messages it has taken, so a concurrent walk would not see them).
 */
export class ParkedMessages {
  private readonly session: Session;
  /** The session's close count when the public call now running began (see during). */
  private readonly calls = new AsyncLocalStorage<number>();
  /** The scope as given; the application's own queues are read at each call (currentScope). */
  private readonly scope: Omit<ParkedScope, 'own'>;

  constructor(
    private readonly options: ParkedMessagesOptions = {},
    private readonly internals: ParkedMessagesInternals = {},
  ) {
    this.session = internals.session ?? { locks: new Map(), closes: 0, running: new Set() };
    this.scope = {
      named: (options.queues ?? []).map((entry) => (typeof entry === 'string' ? { queue: entry } : entry)),
      applications: options.application === undefined ? [] : [options.application],
      wholeVhost: options.wholeVhost === true,
    };
  }

  /**
   * A view of every handler queue recorded on the vhost, on this instance's connection: for an operator's page that
   * looks after every application (RetryDashboardModule option `wholeVhost`).
   */
  wholeVhost(): ParkedMessages {
    return new ParkedMessages({ ...this.options, wholeVhost: true }, { ...this.internals, session: this.session });
  }

  /** Connects now (a wrong URL fails here rather than at the first call). */
  static async connect(options: ParkedMessagesOptions = {}): Promise<ParkedMessages> {
    const parked = new ParkedMessages(options);
    await parked.connection();
    return parked;
  }

  /**
   * Every handler queue in scope with the depths of its queue, its tiers and its parking queue. A record whose handler
   * queue and parking queue were both deleted since is left out.
   */
  async queues(): Promise<HandlerQueueState[]> {
    return this.during(async () => {
      const known = await this.known();
      const live = new Map((this.internals.live?.() ?? []).map((activity) => [activity.queue, activity]));
      const states = await Promise.all(
        known.map(async (q): Promise<HandlerQueueState> => {
          const { messages, consumers } = await this.stats(q.queue);
          const mine = live.get(q.queue);
          return {
            queue: q.queue,
            role: isDelayLadderQueue(q) ? 'delay-ladder' : 'handler',
            messages,
            ...(consumers !== undefined && { consumers }),
            ...(mine && { inFlight: mine.inFlight, activity: { handled: mine.handled, retried: mine.retried, parked: mine.parked } }),
            ...(mine?.state !== undefined && { state: mine.state }), // the page's State column
            tiers: await Promise.all(q.tiers.map(async (tier) => ({ queue: tier, messages: await this.depth(tier) }))),
            errorQueue: q.errorQueue,
            parked: await this.depth(q.errorQueue),
          };
        }),
      );
      return states.filter((state) => state.messages >= 0 || state.parked >= 0);
    });
  }

  /**
   * The parking queue of a handler queue in scope: as its engine runs it, given in the options or recorded by its
   * handler; for the whole vhost, `<queue>.error` when nothing says otherwise. Throws ParkedScopeError out of scope.
   */
  async errorQueueOf(queue: string): Promise<string> {
    return this.during(async () => {
      const errorQueue = parkingQueueOf(this.currentScope(), await this.known(), queue);
      if (errorQueue === undefined) throw this.outOfScope(queue, 'handler queue');
      return errorQueue;
    });
  }

  /** How many parked messages match, by reason and by exception message. */
  async summary(filter: ParkedFilter = {}): Promise<ParkedSummary> {
    return this.during(async () => {
      const views: ParkedMessageView[] = [];
      await this.read(filter, (view) => void views.push(stripBody(view)));
      return summarize(views);
    });
  }

  /** The matching parked messages, in queue order (parking queue by parking queue), a page of them. */
  async list(filter: ParkedFilter = {}, page: PageRequest = {}): Promise<ParkedPage> {
    return this.during(async () => {
      const offset = Math.max(0, Math.floor(page.offset ?? 0));
      const limit = Math.max(0, Math.floor(page.limit ?? DEFAULT_PAGE));
      const items: ParkedMessageView[] = [];
      let total = 0;
      await this.read(filter, (view) => {
        if (total >= offset && items.length < limit) items.push(view);
        total++;
      });
      return { total, items };
    });
  }

  /** One parked message by id, or undefined. */
  async show(errorQueue: string, id: string): Promise<ParkedMessageView | undefined> {
    return this.during(async () => {
      await this.checkParkingQueue(errorQueue);
      return this.walk(errorQueue, async (messages) => {
        for await (const browsed of messages) if (!browsed.duplicate && browsed.view.id === id) return browsed.view;
        return undefined;
      });
    });
  }

  /**
   * Replays the selected messages to the queues they failed in, with fresh attempts: each copy is published through
   * the default exchange to that queue alone (never to the business exchange, whose other queues would get it too),
   * mandatory, and the parked message is acked only once the broker confirmed the copy. A message whose queue is
   * unknown or missing stays parked and is listed in `failed`. Up to REPLAY_WINDOW copies await their confirm at once:
   * a crash (or a lost connection) mid-replay loses nothing and duplicates at most that many.
   */
  async replay(selection: ParkedSelection, options: OperationOptions = {}): Promise<ReplayResult> {
    return this.during(async () => {
      const result: ReplayResult = { matched: 0, replayed: 0, failed: [], dryRun: options.dryRun === true };
      const replayed = new Set<string>();
      await this.checkParkingQueue(selection.errorQueue);
      await this.walk(
        selection.errorQueue,
        async (messages, walk) => {
          const window = new ConfirmWindow(walk.channel);
          for await (const browsed of messages) {
            const { view } = browsed;
            if (browsed.duplicate) {
              if (replayed.has(view.id) && !result.dryRun) settle(walk, browsed); // its twin went back already
              continue;
            }
            if (!selected(view, selection)) continue;
            result.matched++;
            if (result.dryRun) continue;
            if (!view.queue) {
              result.failed.push({ id: view.id, error: UNKNOWN_TARGET });
              continue;
            }
            browsed.settled = true; // ours now: acked once confirmed, else given back with the channel
            const options = replayPublishOptions(browsed.message.properties, { queue: view.queue, now: new Date() });
            await window.publish(view.queue, browsed.message.content, options, (error, outcome) => {
              if (error) result.failed.push({ id: view.id, error: `the broker refused the copy: ${errorMessage(error)}` });
              else if (outcome === 'returned') result.failed.push({ id: view.id, error: missingTarget(view.queue) });
              else {
                walk.ack(browsed.message);
                replayed.add(view.id);
                result.replayed++;
              }
            });
          }
          await window.drain();
        },
        options.onProgress,
      );
      return result;
    });
  }

  /** Replays one message with a corrected body (and, optionally, content type), like `replay`. */
  async editAndReplay(errorQueue: string, id: string, body: string | Buffer, options: EditReplayOptions = {}): Promise<ReplayResult> {
    return this.during(async () => {
      const content = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
      const result: ReplayResult = { matched: 0, replayed: 0, failed: [], dryRun: options.dryRun === true };
      await this.checkParkingQueue(errorQueue);
      await this.walk(errorQueue, async (messages, walk) => {
        for await (const browsed of messages) {
          if (browsed.duplicate || browsed.view.id !== id) continue;
          result.matched++;
          if (result.dryRun) return;
          const problem = await this.replayOne(walk, browsed, content, options.contentType);
          if (problem) result.failed.push({ id, error: problem });
          else result.replayed++;
          return;
        }
      });
      return result;
    });
  }

  /** Removes the selected messages from the parking queue. */
  async purge(selection: ParkedSelection, options: OperationOptions = {}): Promise<PurgeResult> {
    return this.during(async () => {
      const result: PurgeResult = { matched: 0, purged: 0, dryRun: options.dryRun === true };
      const purged = new Set<string>();
      await this.checkParkingQueue(selection.errorQueue);
      await this.walk(
        selection.errorQueue,
        async (messages, walk) => {
          for await (const browsed of messages) {
            if (browsed.duplicate) {
              if (purged.has(browsed.view.id) && !result.dryRun) settle(walk, browsed);
              continue;
            }
            if (!selected(browsed.view, selection)) continue;
            result.matched++;
            if (result.dryRun) continue;
            settle(walk, browsed);
            purged.add(browsed.view.id);
            result.purged++;
          }
          // Acks are not confirmed by the broker: a round trip after them makes sure it has read them before we report.
          if (!result.dryRun) await walk.channel.checkQueue(selection.errorQueue);
        },
        options.onProgress,
      );
      return result;
    });
  }

  /**
   * The selected messages as JSON lines (one ParkedMessageView each, no newline), left parked. The walk waits for the
   * reader (at most EXPORT_BUFFER lines ahead), and stops, giving every message back, when the reader stops early.
   */
  async *export(selection: ParkedSelection, options: OperationOptions = {}): AsyncIterable<string> {
    await this.checkParkingQueue(selection.errorQueue);
    const lines: string[] = [];
    let stopped = false;
    let finished = false;
    let failure: unknown;
    let wakeReader: (() => void) | undefined;
    let wakeWalk: (() => void) | undefined;
    const walking = this.walk(
      selection.errorQueue,
      async (messages) => {
        for await (const browsed of messages) {
          if (stopped) return;
          if (browsed.duplicate || !selected(browsed.view, selection)) continue;
          lines.push(toJsonLine(browsed.view));
          wakeReader?.();
          while (lines.length >= EXPORT_BUFFER && !stopped) await new Promise<void>((resolve) => (wakeWalk = resolve));
        }
      },
      options.onProgress,
    ).then(
      () => void (finished = true),
      (error: unknown) => void ((failure = error), (finished = true)),
    );
    try {
      for (;;) {
        if (lines.length > 0) {
          yield lines.shift() as string;
          wakeWalk?.();
          continue;
        }
        if (finished) break;
        await Promise.race([new Promise<void>((resolve) => (wakeReader = resolve)), walking]);
      }
    } finally {
      stopped = true;
      wakeWalk?.();
      await walking;
    }
    if (failure !== undefined) throw failure;
  }

  /**
   * Closes the connection (shared with the views made from this instance); a later call opens a new one. A call still
   * running when close() came does not: it fails with NotConnectedError (export() excepted).
   */
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
   * Nest calls this at shutdown when ParkedMessages is a provider, before it closes the HTTP server. Nest 12 closes the
   * HTTP server before the onApplicationShutdown hooks run, and that close waits for the requests in flight: a page
   * request waiting on this instance (a connect to a broker that does not answer, a walk behind another) would hold
   * app.close(). Ended here, it answers with an error at once.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.close();
  }

  /** Nest calls this at shutdown when ParkedMessages is a provider: closes what a request during the shutdown opened. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  /**
   * The module's broker settings, else the options read as the module reads its own (readBrokerUrls: `url` may be a
   * comma-separated list of a cluster's nodes, as AMQP_URL is) with the module's defaults.
   */
  private settings(): Omit<ConnectionSettings, 'connectionName'> {
    if (this.internals.broker) return this.internals.broker;
    const urls = readBrokerUrls({ url: this.options.url }, process.env.AMQP_URL, 'ParkedMessages', true);
    return { urls, reconnect: DEFAULT_RECONNECT, connectTimeoutMs: DEFAULT_CONNECT_TIMEOUT_MS };
  }

  /**
   * The library's one connection implementation (AmqpConnection): the first node that answers, kept alive while this
   * instance is open. Opened on first use; a failed open is tried again by the next call. Nothing is logged: a
   * failure reaches the caller through the call that fails.
   */
  private connection(): Promise<AmqpConnection> {
    const { session } = this;
    const began = this.calls.getStore();
    if (!session.connection && began !== undefined && began !== session.closes) {
      // A call in flight when close() came (a page request during app.close()) would open a connection that nobody
      // closes, and the process would not exit: it fails instead. A call made after close() opens a new one.
      return Promise.reject(new NotConnectedError('ParkedMessages was closed during this call'));
    }
    if (!session.connection) {
      const opening = AmqpConnection.open({ ...this.settings(), name: CONNECTION_NAME }, SILENT_LOGGER).catch((error: unknown) => {
        if (session.connection === opening) session.connection = undefined;
        throw error;
      });
      session.connection = opening;
    }
    return session.connection;
  }

  /** Runs a public call, remembering the close count it began with (connection() reads it); one inside another keeps the outer's. */
  private during<T>(call: () => Promise<T>): Promise<T> {
    if (this.calls.getStore() !== undefined) return call();
    const { running } = this.session;
    return new Promise<T>((resolve, reject) => {
      const end = (error: Error) => reject(error);
      running.add(end);
      this.calls
        .run(this.session.closes, call)
        .then(resolve, reject)
        .finally(() => running.delete(end));
    });
  }

  /** The connection once it is up: a call made while it reconnects waits for it, at most the connect timeout. */
  private async connected(): Promise<AmqpConnection> {
    const connection = await this.connection();
    await connection.whenConnected(this.settings().connectTimeoutMs);
    return connection;
  }

  /** A broker close of one of these channels (a 404 of a passive declare) is expected, and reported by its call. */
  private async channel(): Promise<Channel> {
    return (await this.connected()).createChannel('parked messages', true);
  }

  private async confirmChannel(): Promise<ConfirmChannel> {
    return (await this.connected()).createConfirmChannel();
  }

  /** Ready messages in a queue, or -1 when it does not exist (a passive declare on a channel of its own). */
  private async depth(queue: string): Promise<number> {
    return (await this.stats(queue)).messages;
  }

  /** Ready messages and consumers of a queue; -1 and undefined when it does not exist (a passive declare on a channel of its own). */
  private async stats(queue: string): Promise<{ messages: number; consumers?: number }> {
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
   * The handler queues in scope (see queuesInScope), the application's own as its engine runs them now. The registry
   * is read every time, so that a broker that cannot be reached fails the call; a view given no scope at all fails
   * once it could have read it.
   */
  private async known(): Promise<ScopeQueue[]> {
    const records = await this.records();
    const scope = this.currentScope();
    if (namesNothing(scope)) {
      throw new ParkedScopeError(
        '',
        describeScope(scope),
        'ParkedMessages was given no scope: name the handler queues (queues), an application (application, as in RetryModule), or pass wholeVhost: true to see every application of the vhost',
      );
    }
    return queuesInScope(scope, records);
  }

  private currentScope(): ParkedScope {
    return { ...this.scope, own: this.internals.own?.() };
  }

  private records(): Promise<HandlerRecord[]> {
    return readHandlerRegistry(() => this.channel());
  }

  /** Throws ParkedScopeError unless the parking queue is one of a queue in scope (or any, for the whole vhost). */
  private async checkParkingQueue(errorQueue: string): Promise<void> {
    if (!mayUseParkingQueue(this.currentScope(), await this.known(), errorQueue)) throw this.outOfScope(errorQueue, 'parking queue');
  }

  private outOfScope(name: string, what: 'handler queue' | 'parking queue'): ParkedScopeError {
    const scope = describeScope(this.currentScope());
    return new ParkedScopeError(
      name,
      scope,
      `${JSON.stringify(name)} is not a ${what} this view may use (it looks at ${scope}); nothing was read or changed. Name the queue or its application in the options, or use wholeVhost to see every application's`,
    );
  }

  /**
   * The parking queues to read for a filter: `filter.errorQueue` (if in view), else that of `filter.queue`, else those
   * of every queue in scope (each once).
   */
  private async errorQueuesFor(filter: ParkedFilter): Promise<string[]> {
    const { errorQueue } = filter;
    if (errorQueue !== undefined) {
      await this.checkParkingQueue(errorQueue);
      // A name that no handler recorded and that does not exist is a typing mistake, not an empty parking queue.
      const recorded = (await this.known()).some((q) => q.errorQueue === errorQueue);
      if (!recorded && (await this.depth(errorQueue)) < 0) throw this.outOfScope(errorQueue, 'parking queue');
      return [errorQueue];
    }
    if (filter.queue !== undefined) return [await this.errorQueueOf(filter.queue)];
    return [...new Set((await this.known()).map((q) => q.errorQueue))];
  }

  /** Visits every matching message of every parking queue the filter covers, leaving them parked. */
  private async read(filter: ParkedFilter, visit: (view: ParkedMessageView) => void): Promise<void> {
    for (const errorQueue of await this.errorQueuesFor(filter)) {
      if ((await this.depth(errorQueue)) < 0) continue; // not created yet: nothing parked
      await this.walk(errorQueue, async (messages) => {
        for await (const { view, duplicate } of messages) if (!duplicate && matchesFilter(view, filter)) visit(view);
      });
    }
  }

  /**
   * Runs `work` over a walk of one parking queue on a confirm channel of its own, one walk per queue at a time in
   * this instance; closing the channel afterwards gives back every message not acked.
   */
  private async walk<T>(
    errorQueue: string,
    work: (messages: AsyncGenerator<BrowsedMessage>, walk: Walk) => Promise<T>,
    onProgress?: (done: number, total: number) => void,
  ): Promise<T> {
    const { locks } = this.session;
    const before = locks.get(errorQueue) ?? Promise.resolve();
    const run = before.then(async () => {
      const fallback = await this.fallbackQueue(errorQueue);
      const channel = await this.confirmChannel();
      let acked = 0;
      let held = 0;
      try {
        held = (
          await channel.checkQueue(errorQueue).catch((error: unknown) => {
            throw new Error(`The parking queue "${errorQueue}" does not exist (${errorMessage(error)})`);
          })
        ).messageCount;
        const walk: Walk = { channel, ack: (message) => (channel.ack(message), acked++) };
        return await work(browseParked(channel, errorQueue, fallback, onProgress), walk);
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
      if ((await this.depth(errorQueue)) >= expected) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /**
   * The handler queue that parks in `errorQueue` when only one does: the target of copies parked without
   * `x-original-queue`. Read from every record (and the application's own queues): it names where a message goes,
   * not what the view may see.
   */
  private async fallbackQueue(errorQueue: string): Promise<string> {
    const candidates = [...(this.internals.own?.() ?? []), ...(await this.records())];
    const owners = new Set(candidates.filter((q) => q.errorQueue === errorQueue).map((q) => q.queue));
    return owners.size === 1 ? [...owners][0] : '';
  }

  /** Publishes a fresh copy to the queue the message failed in, confirmed, then acks the parked one. Returns a problem, or undefined. */
  private async replayOne(walk: Walk, browsed: BrowsedMessage, content: Buffer, contentType?: string): Promise<string | undefined> {
    const { view, message } = browsed;
    if (!view.queue) return UNKNOWN_TARGET;
    const outcome = await publishToQueue(
      walk.channel,
      view.queue,
      content,
      replayPublishOptions(message.properties, { queue: view.queue, now: new Date(), contentType }),
    );
    if (outcome === 'returned') return missingTarget(view.queue);
    settle(walk, browsed);
    return undefined;
  }
}

const UNKNOWN_TARGET = 'the queue it failed in is unknown (no x-original-queue header, no single handler recorded for this parking queue)';
const missingTarget = (queue: string) => `the queue "${queue}" does not exist; the message stays parked`;

function selected(view: ParkedMessageView, selection: ParkedSelection): boolean {
  if (selection.ids !== undefined && !selection.ids.includes(view.id)) return false;
  return matchesFilter(view, selection.filter ?? {});
}

/** A walk's channel, and the ack to use on it (counted, to know how many messages should come back). */
interface Walk {
  channel: ConfirmChannel;
  ack(message: GetMessage): void;
}

function settle(walk: Walk, browsed: BrowsedMessage): void {
  walk.ack(browsed.message);
  browsed.settled = true;
}

/** A summary needs no bodies: drop them rather than hold every body of a large queue. */
/** What a summary keeps of a message: no body, no death history, of the headers only the stack (its failure group's frame). */
const stripBody = (view: ParkedMessageView): ParkedMessageView => ({
  ...view,
  body: '',
  headers: view.headers[ParkedHeader.exceptionStack] === undefined ? {} : { [ParkedHeader.exceptionStack]: view.headers[ParkedHeader.exceptionStack] },
  deaths: [],
});
