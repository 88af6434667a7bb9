import type { ConsumeMessage } from 'amqplib';
import { Registry } from 'prom-client';
import { OutboxPublisher, RetryEngine, type RetryObserver } from 'nestjs-amqp-retry';
import { describeHealth } from '../../libs/amqp-retry/src/health/health.report.js';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { sql, useOutboxSuite } from '../support/outbox.js';
import { TcpProxy } from '../support/tcp-proxy.js';

describe('outbox relays: two instances, a broker outage', () => {
  const suite = useOutboxSuite('e2e.outbox.sink');
  const proxies: TcpProxy[] = [];

  beforeEach(() =>
    suite.afterThis(async () => {
      for (const proxy of proxies.splice(0)) await proxy.stop();
    }),
  );

  const sink = async () => {
    await suite.broker.declareQueue(suite.queue);
    const got: ConsumeMessage[] = [];
    await suite.broker.channel.consume(suite.queue, (message) => message && (got.push(message), suite.broker.channel.ack(message)));
    return got;
  };

  const writeRows = async (outbox: OutboxPublisher, transactions: number, perTransaction: number, prefix = 'm') => {
    await Promise.all(
      Array.from({ length: transactions }, (_, t) =>
        suite.kind.inTransaction(async (tx) => {
          for (let r = 0; r < perTransaction; r++) {
            await outbox.publish(tx, { exchange: '', routingKey: suite.queue, body: { t, r }, properties: { messageId: `${prefix}-${t}-${r}` } });
          }
        }),
      ),
    );
  };

  it('two relays on one table share the rows: each message is sent once', async () => {
    const sent = [0, 0];
    const start = async (i: number) => {
      const counter: RetryObserver = { outboxSent: () => void sent[i]++ };
      const app = await startApp([], {
        ...TEST_OPTIONS,
        observers: [counter],
        outbox: { adapter: suite.kind.adapter, table: suite.table, batchSize: 20 },
      });
      suite.apps.push(app);
      return app.get(OutboxPublisher);
    };
    const [outbox] = await Promise.all([start(0), start(1)]);
    const got = await sink();
    await writeRows(outbox, 100, 10);
    await waitFor(() => got.length >= 1_000, '1,000 messages', 30_000);
    await new Promise((resolve) => setTimeout(resolve, 500)); // a double send would arrive now
    const ids = got.map((m) => m.properties.messageId as string);
    process.stdout.write(`Two relays: ${sent[0]} + ${sent[1]} rows sent\n`);
    expect(ids).toHaveLength(1_000);
    expect(new Set(ids).size).toBe(1_000);
    expect(sent[0] + sent[1]).toBe(1_000);
    expect(await sql(`SELECT state, count(*)::int AS n FROM "${suite.table}" GROUP BY state`)).toEqual([{ state: 'sent', n: 1_000 }]);
  });

  it('while the broker is away rows wait (health down, backlog in the metrics); once back, each is sent once', async () => {
    const proxy = await new TcpProxy().start();
    proxies.push(proxy);
    const registry = new Registry();
    const app = await startApp([], {
      ...TEST_OPTIONS,
      url: proxy.url,
      publishTimeout: '500ms',
      reconnect: { initialDelay: '100ms', maxDelay: '500ms' },
      metrics: { registry },
      outbox: { adapter: suite.kind.adapter, table: suite.table, retryDelay: { initial: '100ms', max: '400ms' }, pollInterval: '100ms' },
    });
    suite.apps.push(app);
    const outbox = app.get(OutboxPublisher);
    const engine = app.get(RetryEngine);
    const got = await sink();
    await writeRows(outbox, 1, 1, 'before');
    await waitFor(() => got.length === 1, 'the first message, before the outage');
    // Confirmed and marked: a cut before the confirm would make the relay send it again (at least once).
    await waitFor(async () => (await sql(`SELECT 1 FROM "${suite.table}" WHERE state = 'sent'`)).length === 1, 'the first row marked sent');
    await proxy.cut();
    await writeRows(outbox, 4, 5);
    await waitFor(() => describeHealth(engine.health()).outbox === 'cannot publish', 'the relay reported as unable to publish', 15_000);
    const report = describeHealth(engine.health());
    expect(report.healthy).toBe(false);
    expect(report.problems.join('\n')).toMatch(
      new RegExp(
        `the outbox relay of ${suite.table} cannot publish: Publish to exchange "" with routing key "${suite.queue.replace(/\./g, '\\.')}" failed`,
      ),
    );
    const waiting = async () =>
      (await registry.getSingleMetric('amqp_retry_outbox_rows_waiting')?.get())?.values.find((v) => v.labels.table === suite.table)?.value;
    await waitFor(async () => (await waiting()) === 20, 'the backlog of 20 in the metrics', 15_000);
    const oldest = (await registry.getSingleMetric('amqp_retry_outbox_oldest_age_seconds')?.get())?.values[0]?.value ?? 0;
    expect(oldest).toBeGreaterThan(0);
    const [{ attempts }] = await sql<{ attempts: number }>(`SELECT min(attempts)::int AS attempts FROM "${suite.table}" WHERE state = 'pending'`);
    expect(attempts).toBeGreaterThanOrEqual(1);
    await proxy.restore();
    await waitFor(() => got.length === 21, 'the 20 rows after the outage', 30_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(new Set(got.map((m) => m.properties.messageId)).size).toBe(21);
    expect(got).toHaveLength(21);
    await waitFor(() => describeHealth(engine.health()).outbox === 'relaying', 'the relay healthy again');
    await waitFor(async () => (await waiting()) === 0, 'the backlog emptied in the metrics', 15_000);
  });
});
