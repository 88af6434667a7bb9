import type { ConnectionSettings } from '../amqp/amqp.connection.js';
import { readHandlerRegistry } from '../amqp/handler-registry.writer.js';
import { readBrokerUrls } from '../core/config/broker-urls.reader.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_RECONNECT } from '../core/config/module.config.js';
import type { ParkedFilter, ParkedMessagesOptions } from '../core/parking/parked-messages.types.js';
import {
  describeScope,
  isRecordedParkingQueue,
  mayUseParkingQueue,
  namesNothing,
  nonParkingRole,
  parkingQueueOf,
  queueOfUnnamed,
  queuesInScope,
  replayTargetProblem,
  type ParkedScope,
  type ScopeQueue,
} from '../core/parking/parked.scope.js';
import type { HandlerRecord } from '../core/topology/handler-registry.record.js';
import { ParkedScopeError } from '../errors/parked-scope.error.js';
import { NotAParkingQueueError } from '../errors/not-a-parking-queue.error.js';
import type { ParkedConnection } from './parked.connection.js';
import { ownedBy, targeted, tooLongForAQueue } from './parked-selection.js';
import type { BrowsedMessage } from './parked-queue.browser.js';

/**
 * How a parking queue is known: `recorded` when a handler parks there by the records or the application's own queues;
 * `named` when only the caller's names say so (a `{ queue, errorQueue }` of the options, the CLI's --queue with
 * --error-queue); `unknown` when nothing does (a parking queue named on its own for the whole vhost).
 */
export type ParkingQueueStanding = 'recorded' | 'named' | 'unknown';

/** What a ParkedMessages may see: its scope as given, the application's own queues, the records on the broker. */
export class ParkedView {
  /** The scope as given; the application's own queues are read at each call (currentScope). */
  private readonly scope: Omit<ParkedScope, 'own'>;

  constructor(
    private readonly options: ParkedMessagesOptions,
    private readonly internals: { own?: () => readonly ScopeQueue[]; broker?: Omit<ConnectionSettings, 'connectionName'> },
    private readonly broker: () => ParkedConnection,
  ) {
    this.scope = {
      named: (options.queues ?? []).map((entry) => (typeof entry === 'string' ? { queue: entry } : entry)),
      applications: options.application === undefined ? [] : [options.application],
      wholeVhost: options.wholeVhost === true,
    };
  }

  /** The parking queue of a handler queue in scope; ParkedScopeError for one out of it. */
  async parkingQueueOf(queue: string): Promise<string> {
    const errorQueue = parkingQueueOf(this.currentScope(), await this.known(), queue);
    if (errorQueue === undefined) throw this.outOfScope(queue, 'handler queue');
    return errorQueue;
  }

  /**
   * The module's broker settings, else the options read as the module reads its own (readBrokerUrls: `url` may be a
   * comma-separated list of a cluster's nodes, as AMQP_URL is) with the module's defaults.
   */
  settings(): Omit<ConnectionSettings, 'connectionName'> {
    if (this.internals.broker) return this.internals.broker;
    const urls = readBrokerUrls({ url: this.options.url }, process.env.AMQP_URL, 'ParkedMessages', true);
    return { urls, reconnect: DEFAULT_RECONNECT, connectTimeoutMs: DEFAULT_CONNECT_TIMEOUT_MS };
  }

  /**
   * The handler queues in scope (see queuesInScope), the application's own as its engine runs them now. The registry
   * is read every time, so that a broker that cannot be reached fails the call; a view given no scope at all fails
   * once it could have read it.
   */
  async known(): Promise<ScopeQueue[]> {
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

  currentScope(): ParkedScope {
    return { ...this.scope, own: this.internals.own?.() };
  }

  records(): Promise<HandlerRecord[]> {
    return readHandlerRegistry(() => this.broker().channel());
  }

  /**
   * Throws ParkedScopeError unless the parking queue is one of a queue in scope (or any, for the whole vhost), and
   * NotAParkingQueueError for a queue that is never one (nonParkingRole); else how it is known (ParkingQueueStanding),
   * which tells what a change may act on there (see ParkedMessages.walkOwned).
   */
  async checkParkingQueue(errorQueue: string): Promise<ParkingQueueStanding> {
    const inScope = await this.known();
    if (!mayUseParkingQueue(this.currentScope(), inScope, errorQueue)) throw this.outOfScope(errorQueue, 'parking queue');
    const own = this.internals.own?.() ?? [];
    const records = await this.records();
    const role = nonParkingRole(own, records, errorQueue);
    if (role !== undefined) throw new NotAParkingQueueError(errorQueue, role);
    if (isRecordedParkingQueue([...own, ...records], errorQueue)) return 'recorded';
    return isRecordedParkingQueue(inScope, errorQueue) ? 'named' : 'unknown';
  }

  /**
   * Why a replay may not go to a queue (replayTargetProblem: a handler queue in scope, never one of the library), or
   * undefined. A name too long for a queue is left to the replay, which says so.
   */
  private async replayTargets(): Promise<(queue: string) => string | undefined> {
    const inScope = await this.known();
    const own = this.internals.own?.() ?? [];
    const records = await this.records();
    return (queue) => (tooLongForAQueue(queue) ? undefined : replayTargetProblem(queue, { own, records, inScope }));
  }

  /**
   * The messages of `errorQueue` this view may see (sharedParkingOwners), each with its queue checked as a replay's
   * target (see targeted).
   */
  async mine(errorQueue: string): Promise<(messages: AsyncGenerator<BrowsedMessage>) => AsyncGenerator<BrowsedMessage>> {
    const owners = await this.sharedParkingOwners(errorQueue);
    const problemOf = await this.replayTargets();
    return (messages) => targeted(ownedBy(messages, owners), problemOf);
  }

  outOfScope(name: string, what: 'handler queue' | 'parking queue'): ParkedScopeError {
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
  async errorQueuesFor(filter: ParkedFilter): Promise<string[]> {
    const { errorQueue } = filter;
    if (errorQueue !== undefined) {
      await this.checkParkingQueue(errorQueue);
      // A name that no handler recorded and that does not exist is a typing mistake, not an empty parking queue.
      const recorded = (await this.known()).some((q) => q.errorQueue === errorQueue);
      if (!recorded && (await this.broker().stats(errorQueue)).messages < 0) throw this.outOfScope(errorQueue, 'parking queue');
      return [errorQueue];
    }
    if (filter.queue !== undefined) return [await this.parkingQueueOf(filter.queue)];
    return [...new Set((await this.known()).map((q) => q.errorQueue))];
  }

  /**
   * The handler queues whose messages this view may see in `errorQueue` when queues out of its scope (another
   * application's, by their records) park there too: those in scope that park there, matched against each message's
   * queue (`x-original-queue`). Undefined when every queue parking there is in scope, or the view is the whole vhost:
   * all of its messages are.
   */
  private async sharedParkingOwners(errorQueue: string): Promise<ReadonlySet<string> | undefined> {
    if (this.scope.wholeVhost) return undefined;
    const mine = (await this.known()).filter((q) => q.errorQueue === errorQueue).map((q) => q.queue);
    const parkers = [...(this.internals.own?.() ?? []), ...(await this.records())].filter((q) => q.errorQueue === errorQueue);
    return parkers.some((q) => !mine.includes(q.queue)) ? new Set(mine) : undefined;
  }

  /**
   * The handler queue a copy parked without `x-original-queue` failed in (see queueOfUnnamed): the one queue that parks
   * in `errorQueue`, else the queue whose own parking queue it is. Read from every record (and the application's own
   * queues, and the queues the scope names): it names where a message goes, not what the view may see.
   */
  async fallbackQueue(errorQueue: string): Promise<string> {
    const records = await this.records();
    const scope = this.currentScope();
    const inScope = namesNothing(scope) ? [] : queuesInScope(scope, records);
    return queueOfUnnamed(errorQueue, [...(this.internals.own?.() ?? []), ...records], inScope);
  }
}
