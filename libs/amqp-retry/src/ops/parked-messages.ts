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

const notYet = (what: string) => new Error(`ParkedMessages.${what} is not implemented yet`);

/**
 * Inspect, replay, purge and export the messages parked by the retry handlers. Usable without Nest
 * (`await ParkedMessages.connect({ url })`) and injectable where `RetryModule` is imported. It opens a connection of
 * its own on first use and finds the parking queues from the records running handlers leave on the broker (and
 * `options.queues`).
 *
 * Browsing takes each message without acking it and gives it back (closing its channel): nothing is lost, copied or
 * reordered. A replay publishes a fresh copy to the queue the message failed in, waits for the broker's confirm, and
 * only then removes the parked one.
 */
export class ParkedMessages {
  constructor(private readonly options: ParkedMessagesOptions = {}) {}

  /** Connects now (a wrong URL fails here rather than at the first call). */
  static async connect(options: ParkedMessagesOptions = {}): Promise<ParkedMessages> {
    void options;
    throw notYet('connect');
  }

  /** Every known handler queue with the depths of its queue, its tiers and its parking queue. */
  async queues(): Promise<HandlerQueueState[]> {
    throw notYet('queues');
  }

  /** How many parked messages match, by reason and by exception message. */
  async summary(filter: ParkedFilter = {}): Promise<ParkedSummary> {
    void filter;
    throw notYet('summary');
  }

  /** The matching parked messages, oldest in the queue first, a page of them. */
  async list(filter: ParkedFilter = {}, page: PageRequest = {}): Promise<ParkedPage> {
    void filter;
    void page;
    throw notYet('list');
  }

  /** One parked message by id, or undefined. */
  async show(errorQueue: string, id: string): Promise<ParkedMessageView | undefined> {
    void errorQueue;
    void id;
    throw notYet('show');
  }

  /** Replays the selected messages to the queues they failed in, with fresh attempts. */
  async replay(selection: ParkedSelection, options: OperationOptions = {}): Promise<ReplayResult> {
    void selection;
    void options;
    throw notYet('replay');
  }

  /** Replays one message with a corrected body. */
  async editAndReplay(errorQueue: string, id: string, body: string | Buffer, options: EditReplayOptions = {}): Promise<ReplayResult> {
    void errorQueue;
    void id;
    void body;
    void options;
    throw notYet('editAndReplay');
  }

  /** Removes the selected messages from the parking queue. */
  async purge(selection: ParkedSelection, options: OperationOptions = {}): Promise<PurgeResult> {
    void selection;
    void options;
    throw notYet('purge');
  }

  /** The selected messages as JSON lines (one ParkedMessageView each, no trailing newline), left parked. */
  async *export(selection: ParkedSelection, options: OperationOptions = {}): AsyncIterable<string> {
    void selection;
    void options;
    yield* [];
    throw notYet('export');
  }

  async close(): Promise<void> {
    void this.options;
  }

  /** Nest calls this at shutdown when ParkedMessages is a provider. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
