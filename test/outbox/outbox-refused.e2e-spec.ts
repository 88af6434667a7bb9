import { OutboxPublisher, RetryEngine } from 'nestjs-amqp-retry';
import { ctl } from '../support/broker-control.js';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { TestBroker, waitFor } from '../support/broker.js';
import { sql, useOutboxSuite } from '../support/outbox.js';
import type { Vhost } from '../support/suite.js';

/**
 * A row whose exchange the application's user may not write to: the broker refuses it with a 403 (ACCESS_REFUSED),
 * for good. The relay parks it with the reason, once, and goes on with the rows after it. So too, without a publish, a
 * row whose properties column holds no JSON object.
 */
describe('the outbox relay and a row the broker refuses with 403', () => {
  const forbidden = 'guarded.orders';
  const allowed = 'open.sink';
  const suite = useOutboxSuite('e2e.outbox.refused');
  let vhost: Vhost;
  let url: string;

  beforeEach(async () => {
    vhost = await suite.vhost();
    // The application may configure and read anything, and write anything but the guarded names.
    const user = await suite.user(vhost.name, ['.*', '^(?!guarded\\.).*', '.*']);
    url = vhost.url(user.name, user.password);
    // The tests' own user sets up what the application may not write to.
    const admin = await TestBroker.connect(vhost.url());
    suite.clients.push(admin);
    await admin.channel.assertExchange(forbidden, 'fanout', { durable: true });
    await admin.declareQueue(allowed, { exchange: forbidden, key: '' });
  });

  it('parks the refused row with the 403 in its reason, after one send, and sends the rows after it', async () => {
    const { kind, table } = suite;
    suite.app = await startApp([], { ...TEST_OPTIONS, url, delayedDelivery: false, outbox: { adapter: kind.adapter, table } });
    const outbox = suite.app.get(OutboxPublisher);
    await kind.inTransaction((tx) => outbox.publish(tx, { exchange: forbidden, routingKey: '', body: { doomed: true } }));
    await kind.inTransaction((tx) => outbox.publish(tx, { exchange: '', routingKey: allowed, body: { fine: true } }));
    const rows = await waitFor(async () => {
      const found = await sql<{ exchange: string; state: string; attempts: number; last_error: string | null }>(
        `SELECT exchange, state, attempts, last_error FROM "${table}" ORDER BY id`,
      );
      return found.every((row) => row.state !== 'pending') && found;
    }, 'both rows settled');
    expect(rows.map((row) => [row.exchange, row.state, row.attempts])).toEqual([
      [forbidden, 'parked', 1],
      ['', 'sent', 1],
    ]);
    expect(rows[0].last_error).toMatch(/refused by the broker: .*ACCESS_REFUSED.*guarded\.orders/);
    expect(await ctlCount(allowed)).toBe(1); // the good row only: the refused one never reached the queue
  });

  it('parks at once, unpublished, a row whose properties column holds no JSON object, and sends the next row of its key', async () => {
    const { kind, table } = suite;
    suite.app = await startApp([], {
      ...TEST_OPTIONS,
      url,
      delayedDelivery: false,
      outbox: { adapter: kind.adapter, table, pollInterval: '200ms' },
    });
    // Rows written by other means than OutboxPublisher (manual SQL, another writer), each ahead of a good row of its key.
    const insert = (properties: string, key: string, n: number) =>
      sql(`INSERT INTO "${table}" (exchange, routing_key, body, properties, order_key) VALUES ('', $1, $2, $3::jsonb, $4)`, [
        allowed,
        Buffer.from(JSON.stringify({ n })),
        properties,
        key,
      ]);
    for (const [n, bad] of ['"x"', '[1]', 'null'].entries()) {
      await insert(bad, `k${n}`, n);
      await insert(JSON.stringify({ messageId: `good-${n}` }), `k${n}`, 10 + n);
    }
    const rows = await waitFor(async () => {
      const found = await sql<{ order_key: string; state: string; attempts: number; last_error: string | null }>(
        `SELECT order_key, state, attempts, last_error FROM "${table}" ORDER BY id`,
      );
      return found.every((row) => row.state !== 'pending') && found;
    }, 'every row settled');
    expect(rows.map((row) => [row.order_key, row.state, row.attempts])).toEqual([
      ['k0', 'parked', 0],
      ['k0', 'sent', 1],
      ['k1', 'parked', 0],
      ['k1', 'sent', 1],
      ['k2', 'parked', 0],
      ['k2', 'sent', 1],
    ]);
    expect(rows.filter((row) => row.state === 'parked').map((row) => row.last_error)).toEqual(
      ['"x"', '[1]', 'null'].map((json) => `cannot be sent as it is: the properties column holds ${json}, not a JSON object of AMQP properties`),
    );
    expect(await ctlCount(allowed)).toBe(3); // the good rows only
    expect(suite.app.get(RetryEngine).health().outbox?.relaying).toBe(true);
  });

  async function ctlCount(queue: string): Promise<number> {
    const out = await ctl('list_queues', '-p', vhost.name, '-q', '--no-table-headers', 'name', 'messages');
    const line = out
      .split('\n')
      .map((l) => l.split('\t'))
      .find(([name]) => name === queue);
    return line ? Number(line[1]) : -1;
  }
});
