import type { ConsumeMessage } from 'amqplib';
import type { RetryContext } from '../core/delivery/retry.context.js';
import type { OutboxAdapter } from '../core/outbox/outbox.adapter.js';
import { readInbox } from '../core/outbox/outbox.config.js';
import { MalformedMessageError } from '../errors/malformed-message.error.js';
import { inboxStep } from './inbox.step.js';

const logger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

/** A database in memory: the inbox's record is a row per (queue, id); a transaction's rows are kept only on commit. */
function memoryInbox() {
  const committed = new Set<string>();
  const statements: string[] = [];
  const adapter: OutboxAdapter<{ rows: Set<string>; aborted?: boolean }> = {
    execute: async (tx, sql, params) => {
      statements.push(sql.trim().split(/\s+/)[0]);
      if (tx.aborted)
        throw Object.assign(new Error('current transaction is aborted, commands ignored until end of transaction block'), { code: '25P02' });
      if (/^SELECT 1$/.test(sql)) return { rows: [{}] };
      if (/DELETE/i.test(sql)) return { rows: [{ deleted: 0 }] };
      const key = `${String(params[0])}/${String(params[1])}`;
      if (committed.has(key) || tx.rows.has(key)) return { rows: [] };
      tx.rows.add(key);
      return { rows: [{ inserted: 1 }] };
    },
    transaction: async (work) => {
      const tx = { rows: new Set<string>() };
      const result = await work(tx); // a throw rolls back: its rows are dropped
      for (const row of tx.rows) committed.add(row);
      return result;
    },
  };
  return { adapter, committed, statements };
}

const contextOf = (messageId?: string): RetryContext => ({
  attempt: 1,
  maxAttempts: 3,
  isLastAttempt: false,
  queue: 'orders',
  message: { content: Buffer.from('{}'), properties: { messageId, headers: {} }, fields: { deliveryTag: 1 } } as unknown as ConsumeMessage,
  deaths: [],
  signal: new AbortController().signal,
});

describe('the inbox step', () => {
  it("runs a message once, in the record's transaction, which it sees in context.transaction; a copy is acked uncalled", async () => {
    const { adapter, committed } = memoryInbox();
    const seen: unknown[] = [];
    const invoke = inboxStep(
      'orders',
      readInbox({ adapter }, (k) => k),
      logger,
    )(async (_payload, context) => void seen.push(context.transaction));
    await invoke({}, contextOf('m-1'));
    await invoke({}, contextOf('m-1'));
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ rows: expect.any(Set) });
    expect([...committed]).toEqual(['orders/m-1']);
  });

  it('records nothing when the handler throws, so that the retry runs it', async () => {
    const { adapter, committed } = memoryInbox();
    let fail = true;
    const calls: string[] = [];
    const invoke = inboxStep(
      'orders',
      readInbox({ adapter }, (k) => k),
      logger,
    )(async () => {
      calls.push(fail ? 'failed' : 'handled');
      if (fail) throw new Error('declined');
    });
    await expect(invoke({}, contextOf('m-2'))).rejects.toThrow('declined');
    expect(committed.size).toBe(0);
    fail = false;
    await invoke({}, contextOf('m-2'));
    expect(calls).toEqual(['failed', 'handled']);
  });

  it('parks a message without an id as malformed: an inbox cannot tell its copies apart', async () => {
    const { adapter, statements } = memoryInbox();
    const invoke = inboxStep(
      'orders',
      readInbox({ adapter }, (k) => k),
      logger,
    )(async () => undefined);
    await expect(invoke({}, contextOf(undefined))).rejects.toBeInstanceOf(MalformedMessageError);
    expect(statements).toEqual([]);
  });

  it('fails a message whose handler left its transaction aborted (a caught statement failure), so that nothing is acked unwritten', async () => {
    const { adapter, committed, statements } = memoryInbox();
    const handler = async (_payload: unknown, context: RetryContext) => {
      (context.transaction as unknown as { aborted?: boolean }).aborted = true;
    };
    const step = inboxStep(
      'orders',
      readInbox({ adapter }, (k) => k),
      logger,
    )(handler);
    await expect(step({}, contextOf('m-1'))).rejects.toThrow(/transaction commits nothing: a statement in it failed/);
    expect([...committed]).toEqual([]);
    expect(statements.at(-1)).toBe('SELECT');
  });

  it('runs no statement of its own after the handler when the adapter refuses an aborted commit itself', async () => {
    const { adapter, statements } = memoryInbox();
    const step = inboxStep(
      'orders',
      readInbox({ adapter: { ...adapter, refusesAbortedCommit: true } }, (k) => k),
      logger,
    )(async () => undefined);
    await step({}, contextOf('m-1'));
    expect(statements).not.toContain('SELECT');
  });

  it('throws a probe failure other than an aborted transaction (a lost connection) as it is', async () => {
    const { adapter } = memoryInbox();
    const lost = Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    const probeFails: typeof adapter = {
      ...adapter,
      execute: (tx, sql, params) => (sql === 'SELECT 1' ? Promise.reject(lost) : adapter.execute(tx, sql, params)),
    };
    const step = inboxStep(
      'orders',
      readInbox({ adapter: probeFails }, (k) => k),
      logger,
    )(async () => undefined);
    await expect(step({}, contextOf('m-1'))).rejects.toBe(lost);
  });
});
