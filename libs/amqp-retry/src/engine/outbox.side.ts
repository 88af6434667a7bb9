import type { ModuleConfig } from '../core/config/module.config.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { OutboxBacklogEvent } from '../core/observe/retry.observer.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { OutboxAdapter } from '../core/outbox/outbox.adapter.js';
import type { OutboxMessage } from '../core/outbox/outbox.message.js';
import { relayPoolProblem } from '../core/outbox/outbox.pool.js';
import { readPublishDelay } from '../core/delivery/delay.plan.js';
import { RetryConfigError } from '../errors/retry-config.error.js';
import type { EngineHandler } from './handler.runtime.js';
import { OutboxRelay, readBacklog, type OutboxRelayHealth } from './outbox.relay.js';
import { prepareTable } from './outbox.tables.js';
import { writeToOutbox, type OutboxReceipt } from './outbox.writer.js';
import type { Outgoing, PublishingSide } from './publishing.side.js';

/** The outbox's backlog as the parked-messages page shows it. */
export interface OutboxBacklog extends OutboxBacklogEvent {
  /** This instance's relay, when it runs one. */
  relay?: OutboxRelayHealth;
}

/** The engine's outbox and inboxes: writes in the caller's transaction, the relay, the backlog, and the tables. */
export class OutboxSide {
  private relay?: OutboxRelay;
  /** Tables made sure of, once per engine: by their quoted names, per adapter (each may reach another database). */
  private readonly tables = new Map<OutboxAdapter, Set<string>>();

  constructor(
    private readonly config: ModuleConfig,
    private readonly publishing: PublishingSide,
    private readonly logger: RetryLogger,
    private readonly observers: ObserverHub,
  ) {}

  /** Writes `message` in the caller's transaction `tx` (see RetryEngine.writeToOutbox). */
  async write<Tx>(tx: Tx, message: OutboxMessage): Promise<OutboxReceipt> {
    const { outbox } = this.config;
    if (!outbox) throw new Error('The outbox is not configured: give RetryModule option "outbox", e.g. { adapter: pgOutboxAdapter(pool) }');
    // A delay this instance could never deliver fails here, in the caller's transaction, rather than parking later.
    if (message?.delay !== undefined && readPublishDelay(message.delay) > 0) this.publishing.delayLadderPrefix();
    return writeToOutbox(outbox, tx, message);
  }

  /** The backlog now (rows waiting, the oldest one's age, rows parked) and this instance's relay; undefined without an outbox. */
  async backlog(): Promise<OutboxBacklog | undefined> {
    const { outbox } = this.config;
    if (!outbox) return undefined;
    return { ...(await readBacklog(outbox)), relay: this.relay?.health() };
  }

  /** The relay's health, while it runs. */
  get relayHealth(): OutboxRelayHealth | undefined {
    return this.relay?.health();
  }

  /** Creates (or checks) the outbox's table and these handlers' inbox tables, each once. */
  async prepareTables(handlers: readonly EngineHandler[]): Promise<void> {
    const { outbox } = this.config;
    const tables = [
      ...(outbox
        ? [{ ...outbox, qualified: outbox.sql.outboxName, option: 'outbox.table', ddl: outbox.sql.outboxTables, shape: outbox.sql.outboxShape }]
        : []),
      ...handlers.flatMap(({ config: { inbox } }) =>
        inbox ? [{ ...inbox, qualified: inbox.sql.inboxName, option: 'inbox.table', ddl: inbox.sql.inboxTables, shape: inbox.sql.inboxShape }] : [],
      ),
    ];
    for (const { adapter, sql, qualified, tableName, option, createTables, ddl, shape } of tables) {
      const prepared = this.tables.get(adapter) ?? new Set<string>();
      if (prepared.has(qualified)) continue;
      await prepareTable(adapter, sql, { qualified, shown: tableName, option, create: createTables ? ddl : undefined, shape });
      this.tables.set(adapter, prepared.add(qualified));
    }
  }

  /** Starts the relay of this instance (once), when the outbox is configured with `relay` on. */
  async startRelay(): Promise<void> {
    const { outbox } = this.config;
    if (!outbox?.relay || this.relay) return;
    const small = relayPoolProblem(outbox.adapter.maxConnections?.(), outbox.concurrency, outbox.adapter.listen !== undefined);
    if (small?.refuse) throw new RetryConfigError('outbox.adapter', small.problem, small.fix);
    if (small) this.logger.warn(`The outbox's adapter ${small.problem}. ${small.fix}`);
    await this.prepareTables([]);
    const publish = (exchange: string, routingKey: string, content: Buffer, properties: Outgoing['properties'], delayMs = 0) =>
      this.publishing.publish('relay', { exchange, routingKey, content, properties }, delayMs);
    const relay = new OutboxRelay(outbox, publish, this.logger, this.observers);
    this.relay = relay;
    await relay.start();
  }

  /** Stops the relay (its round in flight ends first). */
  async stop(): Promise<void> {
    const relay = this.relay;
    this.relay = undefined;
    await relay?.stop();
  }
}
