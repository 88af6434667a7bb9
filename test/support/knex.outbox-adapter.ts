// The Knex adapter of docs/outbox.md, as written there: the e2e tests run the outbox and the inbox through it, so the
// documented example is known to work.
import type { Knex } from 'knex';
import type { OutboxAdapter } from 'nestjs-amqp-retry';

export function knexOutboxAdapter(knex: Knex): OutboxAdapter<Knex.Transaction> {
  // Knex binds `?`; the library writes PostgreSQL's `$1, $2...`: reorder the values to match.
  const raw = (runner: Knex | Knex.Transaction, sql: string, params: readonly unknown[]) => {
    const values: unknown[] = [];
    const text = sql.replace(/\$(\d+)/g, (_, n: string) => (values.push(params[Number(n) - 1]), '?'));
    return runner.raw(text, values as Knex.RawBinding[]);
  };
  return {
    execute: async (trx, sql, params) => ({ rows: (await raw(trx, sql, params)).rows }),
    transaction: (work) => knex.transaction((trx) => work(trx)),
  };
}
