import type { ConsumeMessage } from 'amqplib';
import knexFactory from 'knex';
import pg from 'pg';
import { OutboxPublisher, pgOutboxAdapter, type OutboxAdapter } from 'nestjs-amqp-retry';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { knexOutboxAdapter } from '../support/knex.outbox-adapter.js';
import { pgKind, sql, useOutboxSuite } from '../support/outbox.js';
import { POSTGRES_URL } from '../support/stores.js';
import { settleWindow } from '../support/suite.js';

/**
 * A publish to the outbox on what is no transaction (the pg Pool itself, the knex instance) would write a row that
 * commits alone, whatever the caller's work does next. It is refused at run time, with nothing written and nothing
 * sent, for the library's pg adapter and for the documented Knex adapter alike; and it does not compile (the
 * `@ts-expect-error` lines below fail the typecheck if it does).
 */
describe('the outbox refuses what is no transaction', () => {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 5 });
  const knex = knexFactory({ client: 'pg', connection: POSTGRES_URL, pool: { min: 0, max: 5 } });
  const suite = useOutboxSuite('e2e.outbox.notx', { kind: () => pgKind(pool), tablePrefix: 'e2e_outbox_notx', afterAll: () => knex.destroy() });

  /** Starts a writer and relay on `adapter`, a queue to send to, and what arrives there. */
  const start = async (adapter: OutboxAdapter) => {
    const { broker, queue, table } = suite;
    const app = (suite.app = await startApp([], { ...TEST_OPTIONS, outbox: { adapter, table, pollInterval: '100ms' } }));
    await broker.declareQueue(queue);
    const got: ConsumeMessage[] = [];
    await broker.channel.consume(queue, (message) => message && (got.push(message), broker.channel.ack(message)));
    return { outbox: app.get(OutboxPublisher), got };
  };

  /** Nothing was written, and nothing is sent; then a publish in a transaction goes, to show the relay runs. */
  const expectNothingWritten = async (got: ConsumeMessage[], sendInTransaction: () => Promise<unknown>) => {
    expect(await sql(`SELECT id FROM "${suite.table}"`)).toEqual([]);
    await sendInTransaction();
    await waitFor(() => got.length >= 1, 'the message published in a transaction');
    await settleWindow(300);
    expect(got.map((message) => message.properties.messageId as string)).toEqual(['in-a-transaction']);
  };

  it('pg: refuses the Pool itself, naming it, and writes nothing', async () => {
    const { queue } = suite;
    const { outbox, got } = await start(pgOutboxAdapter(pool));
    // @ts-expect-error a pg Pool is not a transaction
    const refused = outbox.publish(pool, { exchange: '', routingKey: queue, body: { n: 1 }, properties: { messageId: 'on-the-pool' } });
    await expect(refused).rejects.toThrow(/pgOutboxAdapter: this is the pool, not a client in a transaction/);
    await expectNothingWritten(got, async () => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await outbox.publish(client, { exchange: '', routingKey: queue, body: { n: 2 }, properties: { messageId: 'in-a-transaction' } });
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    });
  });

  it('knex (the documented adapter): refuses the knex instance, and writes nothing', async () => {
    const { queue } = suite;
    const { outbox, got } = await start(knexOutboxAdapter(knex));
    // @ts-expect-error a Knex instance outside knex.transaction() is not a transaction
    const refused = outbox.publish(knex, { exchange: '', routingKey: queue, body: { n: 1 }, properties: { messageId: 'on-the-instance' } });
    await expect(refused).rejects.toThrow(/the transaction given is in no transaction block .* nothing was written/);
    await expectNothingWritten(got, () =>
      knex.transaction((trx) =>
        outbox.publish(trx, { exchange: '', routingKey: queue, body: { n: 2 }, properties: { messageId: 'in-a-transaction' } }),
      ),
    );
  });
});
