import type { ConnectionSettings } from '../amqp/amqp.connection.js';
import { ParkedCountChangedError } from '../errors/parked-count-changed.error.js';
import type { ScopeQueue } from '../core/parking/parked.scope.js';
import { matchesFilter, ParkedTally, toJsonLine, withBodyPreview } from '../core/parking/parked.view.js';
import { isDelayLadderQueue } from '../core/delivery/delay.plan.js';
import type { QueueActivity } from '../engine/engine.views.js';
import { editReplayWalk, replayWalk } from './parked.replay.js';
import { FOREIGN_MESSAGES, parkedByLibrary, parkedOnly, READER_STALL_MS, readerStalled, selected } from './parked-selection.js';
import { NotAParkingQueueError } from '../errors/not-a-parking-queue.error.js';
import { ParkedView } from './parked.view.js';
import { newSession, ParkedConnection, settle, type Session, type WalkWork } from './parked.connection.js';
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
/** Lines an export walks ahead of its reader. */
const EXPORT_BUFFER = 256;
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
 * reordered. Calls on one parking queue run one after the other within an instance (a walk holds the messages it has
 * taken, so a concurrent walk would not see them).
 */
export class ParkedMessages {
  /** The connection, shared with the views made from this instance, and the walks of its parking queues. */
  private readonly broker: ParkedConnection;
  /** What this instance may see. */
  private readonly view: ParkedView;

  constructor(
    private readonly options: ParkedMessagesOptions = {},
    private readonly internals: ParkedMessagesInternals = {},
  ) {
    this.broker = new ParkedConnection(
      internals.session ?? newSession(),
      () => this.view.settings(),
      (errorQueue) => this.view.fallbackQueue(errorQueue),
    );
    this.view = new ParkedView(options, internals, () => this.broker);
  }

  /**
   * A view of every handler queue recorded on the vhost, on this instance's connection: for an operator's page that
   * looks after every application (RetryDashboardModule option `wholeVhost`).
   */
  wholeVhost(): ParkedMessages {
    return new ParkedMessages({ ...this.options, wholeVhost: true }, { ...this.internals, session: this.broker.session });
  }

  /** Connects now (a wrong URL fails here rather than at the first call). */
  static async connect(options: ParkedMessagesOptions = {}): Promise<ParkedMessages> {
    const parked = new ParkedMessages(options);
    await parked.broker.connection();
    return parked;
  }

  /**
   * Every handler queue in scope with the depths of its queue, its tiers and its parking queue. A record whose handler
   * queue and parking queue were both deleted since is left out.
   */
  async queues(): Promise<HandlerQueueState[]> {
    return this.broker.during(async () => {
      const known = await this.view.known();
      const live = new Map((this.internals.live?.() ?? []).map((activity) => [activity.queue, activity]));
      const states = await Promise.all(
        known.map(async (q): Promise<HandlerQueueState> => {
          const { messages, consumers } = await this.broker.stats(q.queue);
          const mine = live.get(q.queue);
          return {
            queue: q.queue,
            role: isDelayLadderQueue(q) ? 'delay-ladder' : 'handler',
            messages,
            ...(consumers !== undefined && { consumers }),
            ...(mine && { inFlight: mine.inFlight, activity: { handled: mine.handled, retried: mine.retried, parked: mine.parked } }),
            ...(mine?.state !== undefined && { state: mine.state }),
            tiers: await Promise.all(q.tiers.map(async (tier) => ({ queue: tier, messages: (await this.broker.stats(tier)).messages }))),
            errorQueue: q.errorQueue,
            parked: (await this.broker.stats(q.errorQueue)).messages,
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
    return this.broker.during(() => this.view.parkingQueueOf(queue));
  }

  /** How many parked messages match, by reason and by exception message; with `{ groups: true }` also the failure groups and the oldest park (the console). */
  async summary(filter: ParkedFilter = {}, options: { groups?: boolean } = {}): Promise<ParkedSummary> {
    return this.broker.during(async () => {
      const tally = new ParkedTally(options.groups === true);
      await this.read(filter, (view) => tally.add(view));
      return tally.summary();
    });
  }

  /**
   * The matching parked messages, in queue order (parking queue by parking queue), a page of them; with
   * `bodyPreviewBytes`, each body cut to that many bytes (`show()` and `export()` give it whole).
   */
  async list(filter: ParkedFilter = {}, page: PageRequest = {}): Promise<ParkedPage> {
    return this.broker.during(async () => {
      const offset = Math.max(0, Math.floor(page.offset ?? 0));
      const limit = Math.max(0, Math.floor(page.limit ?? DEFAULT_PAGE));
      const preview = page.bodyPreviewBytes;
      if (preview !== undefined && !(Number.isSafeInteger(preview) && preview >= 0))
        throw new RangeError(`ParkedMessages.list: bodyPreviewBytes is ${String(preview)}; give a whole number of bytes, 0 or more`);
      const items: ParkedMessageView[] = [];
      let total = 0;
      await this.read(filter, (view) => {
        if (total >= offset && items.length < limit) items.push(preview === undefined ? view : withBodyPreview(view, preview));
        total++;
      });
      return { total, items };
    });
  }

  /** One parked message by id, or undefined. */
  async show(errorQueue: string, id: string): Promise<ParkedMessageView | undefined> {
    return this.walkParked(errorQueue, async (messages) => {
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
    const limit = await this.confirmedLimit(selection, options);
    await this.walkParked(selection.errorQueue, replayWalk(selection, limit, result), options.onProgress, true);
    return result;
  }

  /** Replays one message with a corrected body (and, optionally, content type), like `replay`. */
  async editAndReplay(errorQueue: string, id: string, body: string | Buffer, options: EditReplayOptions = {}): Promise<ReplayResult> {
    const content = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
    const result: ReplayResult = { matched: 0, replayed: 0, failed: [], dryRun: options.dryRun === true };
    await this.walkParked(errorQueue, editReplayWalk(id, content, options.contentType, result), undefined, true);
    return result;
  }

  /** Removes the selected messages from the parking queue. */
  async purge(selection: ParkedSelection, options: OperationOptions = {}): Promise<PurgeResult> {
    const result: PurgeResult = { matched: 0, purged: 0, dryRun: options.dryRun === true };
    const limit = await this.confirmedLimit(selection, options);
    const purged = new Set<string>();
    await this.walkParked(
      selection.errorQueue,
      async (messages, walk) => {
        for await (const browsed of messages) {
          if (browsed.duplicate && purged.has(browsed.view.id)) settle(walk, browsed);
          if (browsed.duplicate || !selected(browsed.view, selection) || result.matched === limit) continue;
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
      true,
    );
    return result;
  }

  /**
   * The selected messages as JSON lines (one ParkedMessageView each, no newline), left parked. The walk waits for the
   * reader (at most EXPORT_BUFFER lines ahead), and stops, giving every message back, when the reader stops early, or
   * takes nothing for READER_STALL_MS (the iterator then throws once it has yielded the lines read before).
   */
  async *export(selection: ParkedSelection, options: OperationOptions = {}): AsyncIterable<string> {
    const lines: string[] = [];
    let stopped = false;
    let finished = false;
    // The walk waits only with EXPORT_BUFFER lines ahead, the reader only with none: one of them at a time.
    let wake: (() => void) | undefined;
    const walking = this.walkOwned(
      selection.errorQueue,
      async (messages) => {
        for await (const browsed of messages) {
          if (stopped) return;
          if (browsed.duplicate || !selected(browsed.view, selection)) continue;
          lines.push(toJsonLine(browsed.view));
          wake?.();
          while (lines.length >= EXPORT_BUFFER && !stopped) {
            const woken = await new Promise<boolean>((resolve) => {
              const timer = setTimeout(() => resolve(false), READER_STALL_MS);
              wake = () => (clearTimeout(timer), resolve(true));
            });
            if (!woken) throw readerStalled(selection.errorQueue);
          }
        }
      },
      options.onProgress,
    ).finally(() => (finished = true));
    try {
      while (lines.length > 0 || !finished) {
        if (lines.length === 0) await Promise.race([new Promise<void>((resolve) => (wake = resolve)), walking.catch(() => undefined)]);
        else yield lines.shift() as string;
        wake?.();
      }
    } finally {
      stopped = true;
      wake?.();
      await walking.catch(() => undefined);
    }
    await walking;
  }

  /**
   * Closes the connection (shared with the views made from this instance); a later call opens a new one. A call still
   * running when close() came does not: it fails with NotConnectedError (export() excepted).
   */
  close(): Promise<void> {
    return this.broker.close();
  }

  /**
   * Nest calls this at shutdown when ParkedMessages is a provider. Nest 12 closes the HTTP server before the
   * onApplicationShutdown hooks, waiting for the requests in flight: a page request waiting on this instance (a connect
   * to a broker that does not answer, a walk behind another) would hold app.close(). Ended here, it fails at once.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.close();
  }

  /** Nest calls this at shutdown when ParkedMessages is a provider: closes what a request during the shutdown opened. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  /** A public call's walk of one parking queue (see walkOwned). */
  private walkParked<T>(errorQueue: string, work: WalkWork<T>, onProgress?: OperationOptions['onProgress'], change = false): Promise<T> {
    return this.broker.during(() => this.walkOwned(errorQueue, work, onProgress, change));
  }

  /**
   * A walk of the messages of one parking queue this view owns, once it has checked that it may use it (see
   * ParkedConnection.walk), each with its queue checked as a replay's target (targeted). A `change` (a replay, a purge,
   * their dry runs) acts on the library's parked copies (`x-parked-reason`) only in a queue that no record or own
   * handler names as a parking queue. One only the caller names with its handler queue (ParkingQueueStanding `named`)
   * leaves the other messages alone; one named on its own is first read through, and refused (NotAParkingQueueError)
   * when a message there was not parked by the library: a live queue named by mistake is left as it was.
   */
  private async walkOwned<T>(errorQueue: string, work: WalkWork<T>, onProgress?: OperationOptions['onProgress'], change = false): Promise<T> {
    const standing = await this.view.checkParkingQueue(errorQueue);
    const mine = await this.view.mine(errorQueue);
    if (!change || standing === 'recorded') return this.broker.walk(errorQueue, (messages, walk) => work(mine(messages), walk), onProgress);
    if (standing === 'unknown') {
      await this.broker.walk(errorQueue, async (messages) => {
        for await (const browsed of mine(messages)) if (!parkedByLibrary(browsed)) throw new NotAParkingQueueError(errorQueue, FOREIGN_MESSAGES);
      });
    }
    return this.broker.walk(errorQueue, (messages, walk) => work(parkedOnly(mine(messages)), walk), onProgress);
  }

  /**
   * The most messages a replay or a purge may act on: `expected`, once the matches counted again agree with it
   * (ParkedCountChangedError when they do not, before anything changed); no bound without it.
   */
  private async confirmedLimit(selection: ParkedSelection, options: OperationOptions): Promise<number> {
    if (options.expected === undefined || options.dryRun === true) return Infinity;
    const { matched } = await this.purge(selection, { dryRun: true });
    if (matched !== options.expected) throw new ParkedCountChangedError(selection.errorQueue, options.expected, matched);
    return options.expected;
  }

  /** Visits every matching message of every parking queue the filter covers, leaving them parked. */
  private async read(filter: ParkedFilter, visit: (view: ParkedMessageView) => void): Promise<void> {
    for (const errorQueue of await this.view.errorQueuesFor(filter)) {
      const { messages, consumers = 0 } = await this.broker.stats(errorQueue);
      if (messages < 0) continue; // not created yet: nothing parked
      // A consumed queue is no parking queue (a record that says so is wrong): named, the walk refuses it; in scope, left out.
      if (consumers > 0 && filter.errorQueue === undefined) continue;
      const mine = await this.view.mine(errorQueue);
      await this.broker.walk(errorQueue, async (messages) => {
        for await (const { view, duplicate } of mine(messages)) if (!duplicate && matchesFilter(view, filter)) visit(view);
      });
    }
  }
}
