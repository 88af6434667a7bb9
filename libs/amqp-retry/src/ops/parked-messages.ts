import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type GetMessage } from 'amqplib';
import { readHandlerRegistry } from '../amqp/handler-registry.js';
import { errorMessage } from '../core/error-message.js';
import type { HandlerRecord } from '../core/handler-registry.record.js';
import { readUrl, readUrlList } from '../core/broker-urls.js';
import { maskCredentials } from '../core/credentials.mask.js';
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

/** A handler queue and where it parks, from the registry or the options. */
type KnownQueue = Pick<HandlerRecord, 'queue' | 'errorQueue' | 'tiers'>;

/**
 * Inspect, replay, purge and export the messages parked by the retry handlers. Usable without Nest
 * (`await ParkedMessages.connect({ url })`) and injectable where `RetryModule` is imported. It opens a connection of
 * its own on first use and finds the parking queues from the records running handlers leave on the broker (and
 * `options.queues`).
 *
 * Browsing takes each message without acking it and gives it back (closing its channel): nothing is lost, copied or
 * reordered. A replay publishes a fresh copy to the queue the message failed in, waits for the broker's confirm, and
 * only then removes the parked one. Calls on one parking queue run one after the other within an instance (a walk
 * holds the messages it has taken, so a concurrent walk would not see them).
 */
export class ParkedMessages {
  private model?: Promise<ChannelModel>;
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(private readonly options: ParkedMessagesOptions = {}) {}

  /** Connects now (a wrong URL fails here rather than at the first call). */
  static async connect(options: ParkedMessagesOptions = {}): Promise<ParkedMessages> {
    const parked = new ParkedMessages(options);
    await parked.connection();
    return parked;
  }

  /**
   * Every known handler queue with the depths of its queue, its tiers and its parking queue. A record whose handler
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

  /** The parking queue of a handler queue: as recorded by its handler (or given in the options), else `<queue>.error`. */
  async errorQueueOf(queue: string): Promise<string> {
    return (await this.known()).find((q) => q.queue === queue)?.errorQueue ?? `${queue}.error`;
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

  async close(): Promise<void> {
    const model = this.model;
    this.model = undefined;
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
    if (!this.model) {
      const opening = this.connectAny().then(
        (model) => {
          model.on('error', () => undefined); // reported through the calls that fail
          model.on('close', () => {
            if (this.model === opening) this.model = undefined; // the next call connects again
          });
          return model;
        },
        (error: unknown) => {
          this.model = undefined;
          throw error;
        },
      );
      this.model = opening;
    }
    return this.model;
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

  /** The recorded handler queues and those the options name; an option's errorQueue overrides the recorded one. */
  private async known(): Promise<KnownQueue[]> {
    const byQueue = new Map<string, KnownQueue>();
    for (const record of await readHandlerRegistry(() => this.channel())) byQueue.set(record.queue, record);
    for (const entry of this.options.queues ?? []) {
      const { queue, errorQueue } = typeof entry === 'string' ? { queue: entry, errorQueue: undefined } : entry;
      const recorded = byQueue.get(queue);
      byQueue.set(queue, { queue, errorQueue: errorQueue ?? recorded?.errorQueue ?? `${queue}.error`, tiers: recorded?.tiers ?? [] });
    }
    return [...byQueue.values()].sort((a, b) => a.queue.localeCompare(b.queue));
  }

  /** The parking queues to read for a filter: that of `filter.queue`, else all known ones (each once). */
  private async errorQueuesFor(filter: ParkedFilter): Promise<string[]> {
    const known = await this.known();
    const matching = filter.queue === undefined ? known : known.filter((q) => q.queue === filter.queue);
    if (filter.queue !== undefined && matching.length === 0) return [`${filter.queue}.error`];
    return [...new Set(matching.map((q) => q.errorQueue))];
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
    const before = this.locks.get(errorQueue) ?? Promise.resolve();
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
    this.locks.set(errorQueue, settled);
    void settled.then(() => {
      if (this.locks.get(errorQueue) === settled) this.locks.delete(errorQueue);
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

  /** The handler queue that parks in `errorQueue` when only one does: the target of copies parked without `x-original-queue`. */
  private async fallbackQueue(errorQueue: string): Promise<string> {
    const owners = (await this.known()).filter((q) => q.errorQueue === errorQueue);
    return owners.length === 1 ? owners[0].queue : '';
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
