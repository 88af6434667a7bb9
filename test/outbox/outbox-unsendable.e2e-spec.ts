import type { ConsumeMessage } from 'amqplib';
import { OutboxPublisher, RetryEngine } from 'nestjs-amqp-retry';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { sql, useOutboxSuite } from '../support/outbox.js';
import { settleWindow } from '../support/suite.js';

/** The node's max_message_size: small, so that a row over it stays cheap. */
const MAX_MESSAGE_SIZE = 1024 * 1024;

/**
 * Messages the broker cannot carry. A property amqplib or the broker would refuse fails the publish to the outbox, in
 * the caller's transaction, with the error the engine's publish gives; a row over the broker's max_message_size
 * (which the broker refuses with a 406 that closes the channel) is parked with that reason at its first send, and the
 * rows around it are each sent once. On a node of the test's own, whose max_message_size is lowered.
 */
describe('the outbox and messages the broker cannot carry', () => {
  const suite = useOutboxSuite('e2e.outbox.unsendable', {
    tablePrefix: 'e2e_outbox_unsendable',
    // Set before the application connects: 3.10 reads the setting as each channel opens, 4.x keeps it in a
    // persistent term from its boot.
    privateNode: (node) =>
      node.ctl(
        'eval',
        `application:set_env(rabbit, max_message_size, ${MAX_MESSAGE_SIZE}), persistent_term:put(max_message_size, ${MAX_MESSAGE_SIZE}).`,
      ),
  });

  beforeEach(async () => {
    await suite.broker.declareQueue(suite.queue); // the sink
    suite.app = await startApp([], {
      ...TEST_OPTIONS,
      url: suite.node!.url,
      outbox: { adapter: suite.kind.adapter, table: suite.table, pollInterval: '200ms' },
    });
  });

  it('refuses a property the broker cannot carry in the caller transaction, with the error of the engine publish', async () => {
    const { kind, queue: sink, app } = suite;
    const outbox = app!.get(OutboxPublisher);
    const engine = app!.get(RetryEngine);
    const published = await engine.publish('', sink, Buffer.from('{}'), { priority: 300 }).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(published).toBeInstanceOf(RangeError);
    expect(published?.message).toMatch(/Invalid priority 300: a priority is a whole number from 0 to 255/);

    const written = await kind
      .inTransaction((tx) => outbox.publish(tx, { exchange: '', routingKey: sink, body: { n: 1 }, properties: { priority: 300 } }))
      .then(
        () => undefined,
        (error: Error) => error,
      );
    expect(written).toBeInstanceOf(RangeError);
    expect(written?.message).toBe(published?.message);
    const tooLong = await kind
      .inTransaction((tx) => outbox.publish(tx, { exchange: '', routingKey: sink, body: { n: 1 }, properties: { correlationId: 'c'.repeat(300) } }))
      .then(
        () => undefined,
        (error: Error) => error,
      );
    expect(tooLong?.message).toMatch(/Invalid correlationId: 300 bytes, where AMQP allows at most 255/);
    expect(await sql(`SELECT id FROM "${suite.table}"`)).toEqual([]); // both transactions rolled back: no row
  });

  it('parks a row over max_message_size at its first send with the broker reason; the rows around it go once each', async () => {
    const { broker, kind, table, queue: sink, app } = suite;
    const outbox = app!.get(OutboxPublisher);
    const got: ConsumeMessage[] = [];
    await broker.channel.consume(sink, (message) => message && (got.push(message), broker.channel.ack(message)));
    const big = Buffer.alloc(MAX_MESSAGE_SIZE + 512 * 1024, 7);
    await kind.inTransaction(async (tx) => {
      for (let i = 0; i < 150; i++)
        await outbox.publish(tx, { exchange: '', routingKey: sink, body: { n: i }, properties: { messageId: `small-${i}` } });
      await outbox.publish(tx, { exchange: '', routingKey: sink, body: big, properties: { messageId: 'big' } });
      for (let i = 150; i < 300; i++)
        await outbox.publish(tx, { exchange: '', routingKey: sink, body: { n: i }, properties: { messageId: `small-${i}` } });
    });
    const rows = await waitFor(
      async () => {
        const found = await sql<{ message_id: string; state: string; attempts: number; last_error: string | null }>(
          `SELECT properties->>'messageId' AS message_id, state, attempts, last_error FROM "${table}" ORDER BY id`,
        );
        return found.length === 301 && found.every((row) => row.state !== 'pending') && found;
      },
      'every row sent or parked',
      30_000,
    );
    const parked = rows.filter((row) => row.state === 'parked');
    expect(parked.map((row) => [row.message_id, row.attempts])).toEqual([['big', 1]]);
    expect(parked[0].last_error).toMatch(
      new RegExp(
        `refused by the broker: .*PRECONDITION_FAILED - message size ${big.length} is larger than (configured )?max size ${MAX_MESSAGE_SIZE}`,
      ),
    );
    expect(rows.filter((row) => row.state === 'sent' && row.attempts === 1)).toHaveLength(300);
    // Each small row arrived once: the big one's refusal closed no channel under them, so none was sent again.
    await waitFor(() => got.length >= 300, '300 messages in the sink');
    await settleWindow(500); // a copy would come right after: none does
    const ids = got.map((message) => message.properties.messageId as string);
    expect(ids).toHaveLength(300);
    expect(new Set(ids).size).toBe(300);
    expect(ids).not.toContain('big');
  });
});
