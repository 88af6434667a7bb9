import type { ModuleConfig } from '../core/config/module.config.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { OutboxBacklogEvent } from '../core/observe/retry.observer.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { OutboxAdapter } from '../core/outbox/outbox.adapter.js';
import type { OutboxConfig } from '../core/outbox/outbox.config.js';
import { randomUUID } from 'node:crypto';
import type { Options } from 'amqplib';
import { readOutboxMessage, type OutboxMessage } from '../core/outbox/outbox.message.js';
import { relayPoolProblem } from '../core/outbox/outbox.pool.js';
import { readPublishDelay } from '../core/delivery/delay.plan.js';
import { RetryConfigError } from '../errors/retry-config.error.js';
import type { EngineHandler } from './handler.runtime.js';
import { OutboxRelay, readBacklog, type OutboxRelayHealth } from './outbox.relay.js';
import type { Outgoing, PublishingSide } from './publishing.side.js';

/** A table the start makes sure of: the outbox's, or an inbox's. */
type TableConfig = Pick<OutboxConfig, 'adapter' | 'sql' | 'tableName' | 'createTables'>;

/**
 * What a publish to the outbox wrote, to log, store or correlate: the row's id and the message as the relay will send it
 * after the commit (the same fields as `RetryPublisher.publish`'s `PublishedMessage`).
 */
export interface OutboxReceipt {
  /** The row's id in the outbox table. */
  id: string;
  /** The message's AMQP message id: the one the consumer sees, and its inbox recognises copies by. */
  messageId: string;
  /** The exchange the relay publishes it to ('' for the default exchange). */
  exchange: string;
  /** The routing key the relay publishes it with. */
  routingKey: string;
  /** How long after the row's insert it is delivered, in ms (through the delay ladder); 0 for at once. */
  delayMs: number;
  /** The AMQP properties the relay publishes it with: those given, with the defaults filled in (message id, persistent, content type). */
  properties: Readonly<Options.Publish>;
}

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

  /**
   * Writes `message` as a row of the outbox in the caller's transaction `tx` (see RetryEngine.writeToOutbox), and NOTIFYs
   * the relays (at commit). With an order key, first waits for any other open transaction writing that key. Throws,
   * having written nothing, when `tx` is in no transaction block (the insert then finds no writeMark, and adds no row).
   */
  async write<Tx>(tx: Tx, message: OutboxMessage): Promise<OutboxReceipt> {
    const { outbox } = this.config;
    if (!outbox) throw new Error('The outbox is not configured: give RetryModule option "outbox", e.g. { adapter: pgOutboxAdapter(pool) }');
    // A delay this instance could never deliver fails here, in the caller's transaction, rather than parking later.
    if (message?.delay !== undefined && readPublishDelay(message.delay) > 0) this.publishing.delayLadderPrefix();
    const { exchange, routingKey, body, properties, orderKey, delayMs } = readOutboxMessage(message, randomUUID);
    const { adapter, sql } = outbox;
    if (orderKey === null) await adapter.execute(tx, sql.writeMark, []);
    else await adapter.execute(tx, sql.writeMarkAndOrderLock, [`${outbox.tableName}:${orderKey}`]);
    const { rows } = await adapter.execute(tx, sql.insert, [exchange, routingKey, body, JSON.stringify(properties), orderKey, delayMs]);
    if (rows.length === 0) {
      throw new Error(
        `OutboxPublisher.publish: the transaction given is in no transaction block (a connection pool, a client without BEGIN, a Knex instance), so the row would commit on its own: nothing was written to ${outbox.tableName}. Pass what your transaction runs on: a pg client after BEGIN, the manager of dataSource.transaction(), the trx of knex.transaction()`,
      );
    }
    return { id: String(rows[0].id), messageId: properties.messageId, exchange, routingKey, delayMs, properties };
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
    const inboxes = handlers.flatMap(({ config: { inbox } }) => (inbox ? [{ table: inbox, kind: 'inbox' as const }] : []));
    for (const { table, kind } of [...(outbox ? [{ table: outbox, kind: 'outbox' as const }] : []), ...inboxes]) {
      const qualified = table.sql[`${kind}Name` as const];
      const prepared = this.tables.get(table.adapter) ?? new Set<string>();
      if (prepared.has(qualified)) continue;
      await prepareTable(table, kind);
      this.tables.set(table.adapter, prepared.add(qualified));
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

/**
 * Makes sure of a table at start-up: creates it if missing (createTables on), then checks its columns and indexes
 * (CREATE INDEX IF NOT EXISTS silently skips an index whose name another one took). One transaction under the DDL
 * lock (pg_advisory_xact_lock): two CREATE TABLE IF NOT EXISTS racing on the row type fail with "duplicate key value
 * violates unique constraint pg_type_typname_nsp_index".
 */
async function prepareTable({ adapter, sql, tableName, createTables }: TableConfig, kind: 'outbox' | 'inbox'): Promise<void> {
  const option = `${kind}.table`;
  const create = createTables ? sql[`${kind}Tables` as const] : undefined;
  const required = sql[`${kind}Shape` as const];
  await adapter.transaction(async (tx) => {
    const shape = async () => {
      const { rows } = await adapter.execute(tx, sql.tableShape, [sql[`${kind}Name` as const]]);
      return { columns: textArray(rows[0]?.columns), indexes: textArray(rows[0]?.indexes) };
    };
    if (create) {
      await adapter.execute(tx, sql.ddlLock, []);
      for (const statement of create.filter((s) => !s.startsWith('CREATE INDEX'))) await adapter.execute(tx, statement, []);
    }
    const found = await shape();
    if (found.columns.length === 0) {
      throw new Error(
        `The table ${tableName} does not exist, and createTables is false: run libs/amqp-retry/migrations/001_outbox_inbox.sql and the files after it (or outboxMigration() for other names), or set createTables: true`,
      );
    }
    const lacking = required.columns.filter((column) => !found.columns.includes(column));
    if (lacking.length > 0) {
      throw new Error(
        `The table ${tableName} (option ${option}) is not one of this library's: it lacks the column${lacking.length === 1 ? '' : 's'} ${lacking.join(', ')}. Give ${option} the name of a table of the library's own (created at start-up, or by outboxMigration()), or rename the table that has this name.`,
      );
    }
    if (create) for (const statement of create.filter((s) => s.startsWith('CREATE INDEX'))) await adapter.execute(tx, statement, []);
    const indexes = create ? (await shape()).indexes : found.indexes;
    const missing = required.indexes.filter((name) => !indexes.includes(name));
    if (missing.length > 0) {
      throw new Error(
        `The table ${tableName} (option ${option}) lacks the index${missing.length === 1 ? '' : 'es'} ${missing.join(', ')}, which the library needs (without them every relay round and cleanup scans the table): run the CREATE INDEX statements of outboxMigration() for these names, or set createTables: true`,
      );
    }
  });
}

/** A text[] as the driver hands it: an array, or PostgreSQL's text form '{a,b}'. */
function textArray(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String);
  if (typeof value !== 'string' || !value.startsWith('{')) return [];
  const parts = value.slice(1, -1).split(',');
  return parts.filter((part) => part !== '').map((part) => part.replace(/^"|"$/g, ''));
}
