import pg from 'pg';
import { pgOutboxAdapter, RetryConfigError } from 'nestjs-amqp-retry';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { pgKind, useOutboxSuite } from '../support/outbox.js';
import { POSTGRES_URL } from '../support/stores.js';

/**
 * A relay on a pool of one: its LISTEN would keep the only client for good, the application's own `pool.connect()`
 * would never answer and `app.close()` would hang. The start fails instead, saying how many connections the relay
 * needs and what to change, and leaves the pool as it found it.
 */
describe('the outbox relay on a pool too small for it', () => {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
  const suite = useOutboxSuite('e2e.outbox.pool', { kind: () => pgKind(pool), tablePrefix: 'e2e_outbox_pool' });

  it('fails the start with a pool of one, naming the option and the size it needs; the pool answers the application after', async () => {
    const starting = startApp([], { ...TEST_OPTIONS, outbox: { adapter: pgOutboxAdapter(pool), table: suite.table } });
    const failed = await starting.then(
      (started) => ((suite.app = started), undefined),
      (error: Error) => error,
    );
    expect(failed).toBeInstanceOf(RetryConfigError);
    expect(failed?.message).toMatch(
      /outbox\.adapter is on a pool of at most 1 connection, which the relay's LISTEN would hold for good: no round of the relay, nor any transaction of yours, would get one \(the outbox relay needs 3: .*\)\. Give the pool at least 4/,
    );
    const client = await Promise.race([
      pool.connect(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('pool.connect() did not answer')), 5_000)),
    ]);
    expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    client.release();
  });
});
