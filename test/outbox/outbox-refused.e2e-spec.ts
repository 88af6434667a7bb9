import { OutboxPublisher } from 'nestjs-amqp-retry';
import { ctl } from '../support/broker-control.js';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { TestBroker, waitFor } from '../support/broker.js';
import { sql, useOutboxSuite } from '../support/outbox.js';
import type { Vhost } from '../support/suite.js';

/**
 * A row whose exchange the application's user may not write to: the broker refuses it with a 403 (ACCESS_REFUSED),
 * for good. The relay parks it with the reason, once, and goes on with the rows after it.
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

  async function ctlCount(queue: string): Promise<number> {
    const out = await ctl('list_queues', '-p', vhost.name, '-q', '--no-table-headers', 'name', 'messages');
    const line = out
      .split('\n')
      .map((l) => l.split('\t'))
      .find(([name]) => name === queue);
    return line ? Number(line[1]) : -1;
  }
});
