import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type GetMessage } from 'amqplib';
import { readHandlerRegistry } from '../amqp/handler-registry.js';
import { errorMessage } from '../core/error-message.js';
import type { HandlerRecord } from '../core/handler-registry.record.js';
import { readUrl, readUrlList } from '../core/broker-urls.js';
import { maskCredentials } from '../core/credentials.mask.js';
import {
  describeScope,
  mayUseParkingQueue,
  namesNothing,
  parkingQueueOf,
  queuesInScope,
  type ParkedScope,
  type ScopeQueue,
} from '../core/parked-scope.js';
import { ParkedScopeError } from '../errors/parked-scope.error.js';
import { matchesFilter, replayPublishOptions, summarize, toJsonLine } from '../core/parked-view.js';
import { ConfirmWindow } from './confirm.window.js';
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
} from './parked-messages.types.js';

const DEFAULT_URL = 'amqp://guest:guest@localhost:5672';
const DEFAULT_PAGE = 50;
/** Lines an export walks ahead of its reader. */
const EXPORT_BUFFER = 256;
/** Longest wait for a parking queue to take back a walk's messages (someone else may be consuming it). */
const GIVE_BACK_MS = 3000;

/** What instances made from one another share: the connection, and the order of the walks of each parking queue. */
interface Session {
  model?: Promise<ChannelModel>;
  readonly locks: Map<string, Promise<unknown>>;
}

/**
 * How RetryModule makes the instance it provides; not for applications. `own`: the queues the application's engine
 * runs, read at each call.
 */
export interface ParkedMessagesInternals {
  own?: () => readonly ScopeQueue[];
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
  /** The scope as given; the application's own queues are read at each call (currentScope). */
  private readonly scope: Omit<ParkedScope, 'own'>;

  constructor(
    private readonly options: ParkedMessagesOptions = {},
    private readonly internals: ParkedMessagesInternals = {},
  ) {
    this.session = internals.session ?? { locks: new Map() };
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
    const known = await this.known();
    const states = await Promise.all(
      known.map(async (q) => ({
        queue: q.queue,
        messages: await this.depth(q.queue),
        tiers: await Promise.all(q.tiers.map(async (tier) => ({ queue: tier, messages: await this.depth(tier) }))),
        errorQueue: q.errorQueue,
        parked: await this.depth(q.errorQueue),
      })),
    );
    return states.filter((state) => state.messages >= 0 || state.parked >= 0);
  }

  /**
   * The parking queue of a handler queue in scope: as its engine runs it, given in the options or recorded by its
   * handler; for the whole vhost, `<queue>.error` when nothing says otherwise. Throws ParkedScopeError out of scope.
   */
  async errorQueueOf(queue: string): Promise<string> {
    const errorQueue = parkingQueueOf(this.currentScope(), await this.known(), queue);
    if (errorQueue === undefined) throw this.outOfScope(queue, 'handler queue');
    return errorQueue;
  }

  /** How many parked messages match, by reason and by exception message. */
  async summary(filter: ParkedFilter = {}): Promise<ParkedSummary> {
    const views: ParkedMessageView[] = [];
    await this.read(filter, (view) => void views.push(stripBody(view)));
    return summarize(views);
  }

  /** The matching parked messages, in queue order (parking queue by parking queue), a page of them. */
  async list(filter: ParkedFilter = {}, page: PageRequest = {}): Promise<ParkedPage> {
    const offset = Math.max(0, Math.floor(page.offset ?? 0));
    const limit = Math.max(0, Math.floor(page.limit ?? DEFAULT_PAGE));
    const items: ParkedMessageView[] = [];
    let total = 0;
    await this.read(filter, (view) => {
      if (total >= offset && items.length < limit) items.push(view);
      total++;
    });
    return { total, items };
  }

  /** One parked message by id, or undefined. */
  async show(errorQueue: string, id: string): Promise<ParkedMessageView | undefined> {
    await this.checkParkingQueue(errorQueue);
    return this.walk(errorQueue, async (messages) => {
      for await (const browsed of messages) if (!browsed.duplicate && browsed.view.id === id) return browsed.view;
      return undefined;
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
          const options = replayPublishOptions(browsed.message.properties, new Date());
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
  }

  /** Replays one message with a corrected body (and, optionally, content type), like `replay`. */
  async editAndReplay(errorQueue: string, id: string, body: string | Buffer, options: EditReplayOptions = {}): Promise<ReplayResult> {
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
  }

  /** Removes the selected messages from the parking queue. */
  async purge(selection: ParkedSelection, options: OperationOptions = {}): Promise<PurgeResult> {
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

  /** Closes the connection (shared with the views made from this instance). */
  async close(): Promise<void> {
    const model = this.session.model;
    this.session.model = undefined;
    if (model) await (await model.catch(() => undefined))?.close().catch(() => undefined);
  }

  /** Nest calls this at shutdown when ParkedMessages is a provider. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  /** One URL, or the nodes of a cluster as a comma-separated list (as AMQP_URL takes them). */
  private urls(): string[] {
    // Read as the module reads them: a password that is not percent-encoded is named, masked, before amqplib's
    // misleading "Expected amqp: or amqps: as the protocol".
    const key = this.options.url !== undefined ? 'ParkedMessages option "url"' : 'environment variable AMQP_URL';
    const raw = (this.options.url ?? process.env.AMQP_URL ?? DEFAULT_URL).trim().replace(/,+$/, '');
    return raw.includes(',') ? readUrlList(raw, key) : [readUrl(raw, key)];
  }

  /** The first node that answers, in the order given. */
  private async connectAny(): Promise<ChannelModel> {
    const failures: string[] = [];
    for (const url of this.urls()) {
      try {
        // noDelay: a publish, an ack and a get written back to back would otherwise wait on Nagle's algorithm (40 ms each)
        return await amqp.connect(url, { noDelay: true, clientProperties: { connection_name: 'amqp-retry parked messages' } });
      } catch (error) {
        failures.push(maskCredentials(`${url}: ${errorMessage(error)}`));
      }
    }
    throw new Error(`Could not connect to RabbitMQ at ${failures.join('; ')}`);
  }

  private connection(): Promise<ChannelModel> {
    const { session } = this;
    if (!session.model) {
      const opening = this.connectAny().then(
        (model) => {
          model.on('error', () => undefined); // reported through the calls that fail
          model.on('close', () => {
            if (session.model === opening) session.model = undefined; // the next call connects again
          });
          return model;
        },
        (error: unknown) => {
          session.model = undefined;
          throw error;
        },
      );
      session.model = opening;
    }
    return session.model;
  }

  private async channel(): Promise<Channel> {
    return (await (await this.connection()).createChannel()).on('error', () => undefined);
  }

  private async confirmChannel(): Promise<ConfirmChannel> {
    return (await (await this.connection()).createConfirmChannel()).on('error', () => undefined);
  }

  /** Ready messages in a queue, or -1 when it does not exist (a passive declare on a channel of its own). */
  private async depth(queue: string): Promise<number> {
    const channel = await this.channel();
    try {
      return (await channel.checkQueue(queue)).messageCount;
    } catch {
      return -1;
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

  /** The parking queues to read for a filter: that of `filter.queue`, else those of every queue in scope (each once). */
  private async errorQueuesFor(filter: ParkedFilter): Promise<string[]> {
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
    const outcome = await publishToQueue(walk.channel, view.queue, content, replayPublishOptions(message.properties, new Date(), contentType));
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
const stripBody = (view: ParkedMessageView): ParkedMessageView => ({ ...view, body: '', headers: {}, deaths: [] });
