import { OutboxPublisher } from 'nestjs-amqp-retry';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { sql, useOutboxSuite } from '../support/outbox.js';

interface Row {
  state: string;
  attempts: number;
  last_error: string | null;
}

/**
 * A row no queue takes (returned, `mandatory`): tried again with backoff, and parked after `maxUnroutableAttempts`
 * returns in a row. Publishes that failed otherwise before (the broker away) do not bring the park closer.
 */
describe('the outbox relay and a row no queue takes', () => {
  const suite = useOutboxSuite('e2e.outbox.unroutable');
  const outbox = () => ({
    adapter: suite.kind.adapter,
    table: suite.table,
    maxUnroutableAttempts: 3,
    retryDelay: { initial: '20ms', max: '50ms' },
    pollInterval: '50ms',
  });
  const settled = () =>
    waitFor(async () => {
      const rows = await sql<Row>(`SELECT state, attempts, last_error FROM "${suite.table}" ORDER BY id`);
      return rows.length > 0 && rows.every((row) => row.state !== 'pending') && rows;
    }, 'the row settled');

  it('parks it after maxUnroutableAttempts returns, naming them', async () => {
    suite.app = await startApp([], { ...TEST_OPTIONS, outbox: outbox() });
    const publisher = suite.app.get(OutboxPublisher);
    await suite.kind.inTransaction((tx) => publisher.publish(tx, { exchange: '', routingKey: `${suite.queue}.absent`, body: { id: 1 } }));

    const [row] = await settled();
    expect([row.state, row.attempts]).toEqual(['parked', 3]);
    expect(row.last_error).toMatch(/^unroutable after 3 attempts: .*returned as unroutable/);
  });

  it('counts only the returns in a row, not the failed publishes before them', async () => {
    // A row as the relay leaves it after the broker was away for a while: twelve failed publishes.
    suite.app = await startApp([], { ...TEST_OPTIONS, outbox: { ...outbox(), relay: false } });
    await sql(
      `INSERT INTO "${suite.table}" (exchange, routing_key, body, attempts, last_error) VALUES ('', $1, '\\x7b7d', 12, 'the connection closed')`,
      [`${suite.queue}.absent`],
    );
    await suite.app.close();
    suite.app = await startApp([], { ...TEST_OPTIONS, outbox: outbox() });

    const [row] = await settled();
    expect([row.state, row.attempts]).toEqual(['parked', 15]);
    expect(row.last_error).toMatch(/^unroutable after 3 attempts: /);
  });
});
