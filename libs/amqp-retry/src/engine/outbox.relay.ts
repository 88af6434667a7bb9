import type { Options } from 'amqplib';
import { type DurationTimer, startTimer } from '../core/time/duration.timer.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { maskCredentials } from '../core/text/credentials.mask.js';
import type { OutboxConfig } from '../core/outbox/outbox.config.js';
import { storedProperties } from '../core/outbox/outbox.message.js';
import { classifyPublishFailure, nextRowChange, publishFailureStands, type RowChange } from '../core/outbox/outbox.row.js';
import { reconnectDelay } from '../core/connection/reconnect.policy.js';
import { ALONE_FROM_BYTES, SendGate } from '../core/outbox/outbox.send-gate.js';
import { cleanUpInBatches } from '../core/outbox/outbox.cleanup.js';
import { relayDatabaseProblem } from '../core/outbox/outbox.database-failure.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { OutboxBacklogEvent } from '../core/observe/retry.observer.js';

/** Publishes one message with confirms and `mandatory` (the engine's publish): resolves once the broker confirmed it. */
export type RelayPublish = (exchange: string, routingKey: string, content: Buffer, properties: Options.Publish, delayMs: number) => Promise<void>;

/** How often a relay reads the backlog for the metrics, and cleans up sent rows. */
const BACKLOG_EVERY_MS = 5_000;
const CLEANUP_EVERY_MS = 60_000;
/** Most time one loop spends on cleanup batches between two rounds; an unfinished cleanup goes on after the next round. */
const CLEANUP_BUDGET_MS = 500;
/** Backoff of the relay itself while the database does not answer. */
const DATABASE_RETRY = { initialDelayMs: 200, maxDelayMs: 10_000 };

/** What a health check shows of the relay. */
export interface OutboxRelayHealth {
  /** The outbox table ("schema.table" with a schema). */
  table: string;
  /** False while its last publishes failed (the broker away, blocked) or the database did not answer. */
  relaying: boolean;
  /** While not relaying: why, in words. */
  problem?: string;
}

/** The outbox table's backlog now: rows waiting, the oldest one's age, rows parked, and its size on disk. */
export async function readBacklog({ adapter, sql, tableName }: OutboxConfig): Promise<OutboxBacklogEvent> {
  const { rows } = await adapter.transaction((tx) => adapter.execute(tx, sql.stats, []));
  const stats = rows[0] ?? {};
  return {
    table: tableName,
    waiting: Number(stats.waiting ?? 0),
    oldestAgeMs: Number(stats.oldest_ms ?? 0),
    parked: Number(stats.parked ?? 0),
    tableBytes: Number(stats.table_bytes ?? 0),
  };
}

interface ClaimedRow {
  id: string;
  exchange: string;
  routing_key: string;
  body: Buffer;
  properties: unknown;
  attempts: number;
  last_error: string | null;
  remaining_delay_ms: string;
  age_ms: string;
}

/**
 * The outbox relay of one instance: wakes on NOTIFY (polling as the fallback), claims due rows with FOR UPDATE SKIP
 * LOCKED in a transaction of its own (`concurrency` rounds at once: one claims while another waits for its confirms),
 * publishes them with confirms, and marks them in the same transaction: sent, rescheduled with backoff, or parked.
 * A relay that dies mid-round leaves its rows locked until its connection closes; another then sends them again (at
 * least once: the inbox recognises the copy).
 */
export class OutboxRelay {
  private running = false;
  private loops: Promise<void>[] = [];
  private unlisten?: () => Promise<void>;
  private relisten?: DurationTimer;
  /** The loops asleep, each woken by a NOTIFY or its poll timer. */
  private readonly sleepers = new Set<() => void>();
  /** Counts NOTIFYs: a loop that sees it change during its round goes again at once. */
  private notified = 0;
  /** Why its last publishes failed; cleared when a publish goes, and stale once no publish failed for a while. */
  private failure?: string;
  private failedAt = 0;
  /** Why its last round failed in the database; cleared by the next round that succeeds. */
  private databaseFailure?: string;
  /** The last cleanup or backlog reading's failure, logged once. */
  private housekeepingFailure?: string;
  private databaseFailures = 0;
  private lastBacklogAt = 0;
  private lastCleanupAt = 0;
  /** A cleanup ran out of its time budget with rows left: it goes on after the next round. */
  private cleanupUnfinished = false;
  private cleaning = false;
  /** Large rows go alone on the relay's channel (see ALONE_FROM_BYTES). */
  private readonly gate = new SendGate();

  constructor(
    private readonly config: OutboxConfig,
    private readonly publish: RelayPublish,
    private readonly logger: RetryLogger,
    private readonly observers?: ObserverHub,
  ) {}

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.listen();
    this.loops = Array.from({ length: this.config.concurrency }, () => this.run());
    this.logger.log(`Relaying the outbox ${this.config.tableName}${this.unlisten ? ' (woken by NOTIFY, polling as the fallback)' : ' (polling)'}`);
  }

  /** Stops after the round in flight (its publishes are bounded by publishTimeout), and stops listening. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.relisten?.cancel();
    this.wake();
    await Promise.all(this.loops);
    await this.unlisten?.().catch(() => undefined);
    this.unlisten = undefined;
  }

  health(): OutboxRelayHealth {
    const stands = publishFailureStands(this.failedAt, Date.now(), this.config.retry, this.config.pollIntervalMs);
    // The health endpoint and the page show this text: a database's error may quote its connection string.
    const failure = this.databaseFailure ?? (stands ? this.failure : undefined);
    const problem = failure === undefined ? undefined : maskCredentials(failure);
    return { table: this.config.tableName, relaying: problem === undefined, ...(problem !== undefined && { problem }) };
  }

  /** One round now (tests, and the loop): how many rows were claimed. */
  async round(): Promise<number> {
    const { adapter, sql, batchSize } = this.config;
    return adapter.transaction(async (tx) => {
      const { rows } = await adapter.execute(tx, sql.claim, [batchSize]);
      if (rows.length === 0) return 0;
      const claimed = rows as unknown as ClaimedRow[];
      const changes = await Promise.all(claimed.map((row) => this.send(row)));
      const rowsIn = <S extends RowChange['state']>(state: S) =>
        changes.flatMap((change, i) => (change.state === state ? [{ row: claimed[i], ...(change as Extract<RowChange, { state: S }>) }] : []));
      const [sent, retry, park] = [rowsIn('sent'), rowsIn('pending'), rowsIn('parked')];
      const ids = (changed: Array<{ row: ClaimedRow }>) => changed.map(({ row }) => row.id);
      if (sent.length > 0) await adapter.execute(tx, sql.markSent, [ids(sent)]);
      if (retry.length > 0) {
        const columns = [ids(retry), retry.map((r) => r.attempts), retry.map((r) => r.retryInMs), retry.map((r) => r.error)];
        await adapter.execute(tx, sql.reschedule, columns);
      }
      if (park.length > 0) await adapter.execute(tx, sql.park, [ids(park), park.map((r) => r.attempts), park.map((r) => r.reason)]);
      this.report(park, retry.at(-1)?.error, sent.length);
      return rows.length;
    });
  }

  private async send(row: ClaimedRow): Promise<RowChange> {
    const startedAt = Date.now();
    // Not sendable as it is (its properties written by other means than the outbox's insert): parked unpublished.
    const stored = storedProperties(row.properties);
    if ('problem' in stored) return { state: 'parked', attempts: Number(row.attempts), reason: `cannot be sent as it is: ${stored.problem}` };
    try {
      const body = Buffer.isBuffer(row.body) ? row.body : Buffer.from(row.body as unknown as Uint8Array);
      const publish = () => this.publish(row.exchange, row.routing_key, body, stored.properties, Number(row.remaining_delay_ms));
      await this.gate.run(body.length >= ALONE_FROM_BYTES, publish);
      if (this.observers?.active) {
        const lagMs = Number(row.age_ms) + (Date.now() - startedAt);
        this.observers.emit('outboxSent', { table: this.config.tableName, exchange: row.exchange, routingKey: row.routing_key, lagMs });
      }
      return { state: 'sent' };
    } catch (error) {
      return nextRowChange({ attempts: Number(row.attempts), lastError: row.last_error }, classifyPublishFailure(error), this.config.retry);
    }
  }

  /**
   * Logs parked rows (an error each) and a relay that cannot publish (once per outage), and tells observers. `failed`:
   * the error of the round's last row left pending, if any.
   */
  private report(parked: Array<{ row: ClaimedRow; reason: string }>, failed: string | undefined, sent: number): void {
    const { tableName } = this.config;
    for (const { row, reason } of parked) {
      this.logger.error(`Outbox ${tableName}: row ${row.id} to "${row.exchange}" / "${row.routing_key}" parked: ${reason}`);
      this.observers?.emit('outboxParked', { table: tableName, exchange: row.exchange, routingKey: row.routing_key, reason });
    }
    if (sent > 0 || failed === undefined) {
      if (this.failure !== undefined) this.logger.log(`Outbox ${tableName}: publishing again`);
      this.failure = undefined;
    } else {
      if (this.failure === undefined) this.logger.warn(`Outbox ${tableName}: cannot publish (${failed}); rows wait and are tried again with backoff`);
      this.failure = `the outbox relay of ${tableName} cannot publish: ${failed}`;
      this.failedAt = Date.now();
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      let wait = this.config.pollIntervalMs;
      const notifiedBefore = this.notified;
      try {
        claimed = await this.round();
        if (this.databaseFailures > 0) this.logger.log(`Outbox ${this.config.tableName}: the database answers again`);
        this.databaseFailures = 0;
        this.databaseFailure = undefined;
      } catch (error) {
        this.databaseFailures++;
        wait = Math.min(wait, reconnectDelay(this.databaseFailures, DATABASE_RETRY));
        if (this.databaseFailures === 1)
          this.logger.error(`Outbox ${this.config.tableName}: the relay's round failed (${errorMessage(error)}); trying again`);
        this.databaseFailure = relayDatabaseProblem(this.config.tableName, error);
      }
      // Housekeeping fails apart: logged once, its next turn tries again; rounds and health go on as they are.
      if (this.databaseFailures === 0) {
        await this.housekeeping().then(
          () => (this.housekeepingFailure = undefined),
          (error: unknown) => this.housekeepingFailed(error),
        );
      }
      if (!this.running) break;
      // Rows were claimed: more may be due now (a full batch, or the next row of an order key that just went).
      // A rescheduled row is not due at once, so a broker outage does not loop: the next round finds nothing.
      if (claimed > 0 || this.notified !== notifiedBefore) continue;
      await this.sleep(wait);
    }
  }

  private housekeepingFailed(error: unknown): void {
    const problem = relayDatabaseProblem(this.config.tableName, error);
    if (problem !== this.housekeepingFailure) this.logger.warn(`Outbox ${this.config.tableName}: a cleanup or backlog reading failed: ${problem}`);
    this.housekeepingFailure = problem;
  }

  /** Reads the backlog for observers, and deletes sent rows past their retention, each every so often. */
  private async housekeeping(): Promise<void> {
    const now = Date.now();
    const { adapter, sql, retentionMs } = this.config;
    if (this.observers?.active && now - this.lastBacklogAt >= BACKLOG_EVERY_MS) {
      this.lastBacklogAt = now;
      this.observers.emit('outboxBacklog', await readBacklog(this.config));
    }
    // Every minute, or sooner for a retention shorter than that (never more often than the relay polls); batch after
    // batch until done, for at most CLEANUP_BUDGET_MS between two rounds of this loop (one loop at a time cleans).
    const cleanupEvery = Math.min(CLEANUP_EVERY_MS, Math.max(retentionMs, this.config.pollIntervalMs));
    if (this.cleaning || (!this.cleanupUnfinished && now - this.lastCleanupAt < cleanupEvery)) return;
    if (!this.cleanupUnfinished) this.lastCleanupAt = now;
    this.cleaning = true;
    try {
      const batch = async () => {
        const { rows } = await adapter.transaction((tx) => adapter.execute(tx, sql.cleanup, [retentionMs]));
        return Number(rows[0]?.deleted ?? 0);
      };
      this.cleanupUnfinished = !(await cleanUpInBatches(batch, CLEANUP_BUDGET_MS));
    } finally {
      this.cleaning = false;
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        timer.cancel();
        this.sleepers.delete(done);
        resolve();
      };
      const timer = startTimer(ms, done);
      this.sleepers.add(done);
    });
  }

  private wake(): void {
    this.notified++;
    for (const sleeper of [...this.sleepers]) sleeper();
  }

  /** LISTENs when the adapter can; when that connection fails, polls and listens again with backoff. */
  private async listen(attempt = 1): Promise<void> {
    const { adapter, sql, tableName } = this.config;
    if (!adapter.listen || !this.running) return;
    try {
      this.unlisten = await adapter.listen(
        sql.channel,
        () => this.wake(),
        (error) => {
          this.unlisten = undefined;
          this.logger.warn(`Outbox ${tableName}: the LISTEN connection failed (${errorMessage(error)}); polling until it is back`);
          this.scheduleListen(1);
        },
      );
      if (!this.running) return void (await this.unlisten?.().catch(() => undefined));
      if (attempt > 1) this.logger.log(`Outbox ${tableName}: listening again`);
      this.wake(); // rows committed while nobody listened
    } catch (error) {
      if (attempt === 1) this.logger.warn(`Outbox ${tableName}: cannot LISTEN (${errorMessage(error)}); polling meanwhile`);
      this.scheduleListen(attempt);
    }
  }

  private scheduleListen(attempt: number): void {
    if (!this.running) return;
    this.relisten = startTimer(reconnectDelay(attempt, DATABASE_RETRY), () => void this.listen(attempt + 1));
    this.relisten.unref();
  }
}
