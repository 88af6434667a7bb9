import { Controller, Get, Header, Inject } from '@nestjs/common';
import { NonRetryableError, RetryEngine, RetryPublisher } from 'nestjs-amqp-retry';
import { Registry } from 'prom-client';
import { handlerFor, TEST_OPTIONS } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { get, startHealthApp } from '../support/health-app.js';
import { useSuite } from '../support/suite.js';

const REGISTRY = Symbol('test registry');

@Controller()
class MetricsController {
  constructor(@Inject(REGISTRY) private readonly registry: Registry) {}

  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4')
  scrape(): Promise<string> {
    return this.registry.metrics();
  }
}

/** The value of one sample line of a Prometheus text scrape, labels in any order. */
function sample(scrape: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of scrape.split('\n')) {
    const match = line.match(/^([a-z_]+)(?:\{(.*)\})? (\S+)$/);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

describe('Prometheus metrics over HTTP', () => {
  const suite = useSuite('obs.metrics');

  it('counts a flow of 10 handled (2 of them delayed), 3 retried once, 2 parked and 1 rejected publish exactly', async () => {
    const { broker, queue } = suite;
    const exchange = uniqueName('obs.metrics.x');
    suite.extraExchanges.push(exchange);
    const prefix = suite.ladder();
    const registry = new Registry();
    const Handler = handlerFor({ queue, exchange, routingKey: 'm.#', delays: ['100ms'], maxAttempts: 3 }, (payload, context) => {
      const { kind } = payload as { kind: string };
      if (kind === 'flaky' && context.attempt === 1) throw new Error('flaky the first time');
      if (kind === 'bad') throw new NonRetryableError('bad message');
    });
    const started = await startHealthApp(
      { ...TEST_OPTIONS, delayedDelivery: { prefix }, metrics: { registry } },
      { controllers: [MetricsController], providers: [Handler, { provide: REGISTRY, useValue: registry }] },
    );
    const app = (suite.app = started.app);
    const publisher = app.get(RetryPublisher);
    const kinds = [...Array(8).fill('ok'), 'flaky', 'flaky', 'flaky', 'bad', 'bad'];
    for (const kind of kinds) await publisher.publish(exchange, 'm.1', { kind });
    for (let i = 0; i < 2; i++) await publisher.publish(exchange, 'm.1', { kind: 'ok' }, { delay: '100ms' });
    await expect(publisher.publish(uniqueName('obs.missing'), 'm.1', { kind: 'ok' })).rejects.toThrow();

    const metrics = `${started.base}/metrics`;
    const scrape = await waitFor(
      async () => {
        const { text } = await get(metrics);
        // A forwarded message can be handled before the forwarder's confirm (and its count) comes back.
        const done =
          sample(text, 'amqp_retry_deliveries_handled_total', { queue }) === 13 &&
          sample(text, 'amqp_retry_messages_parked_total', { queue, reason: 'non-retryable' }) === 2 &&
          sample(text, 'amqp_retry_delayed_forwarded_total') === 2;
        return done && text;
      },
      'the flow to be counted',
      20_000,
    );
    const byQueue = { queue, pattern: '' };
    expect(sample(scrape, 'amqp_retry_deliveries_handled_total', byQueue)).toBe(13);
    expect(sample(scrape, 'amqp_retry_deliveries_failed_total', byQueue)).toBe(5);
    expect(sample(scrape, 'amqp_retry_deliveries_retried_total', { ...byQueue, tier: '1' })).toBe(3);
    expect(sample(scrape, 'amqp_retry_messages_parked_total', { ...byQueue, reason: 'non-retryable' })).toBe(2);
    expect(sample(scrape, 'amqp_retry_handler_duration_seconds_count', { ...byQueue, outcome: 'handled' })).toBe(13);
    expect(sample(scrape, 'amqp_retry_handler_duration_seconds_count', { ...byQueue, outcome: 'retried' })).toBe(3);
    expect(sample(scrape, 'amqp_retry_handler_duration_seconds_count', { ...byQueue, outcome: 'parked' })).toBe(2);
    expect(sample(scrape, 'amqp_retry_handlers_in_flight', byQueue)).toBe(0);
    expect(sample(scrape, 'amqp_retry_delayed_published_total')).toBe(2);
    expect(sample(scrape, 'amqp_retry_delayed_forwarded_total')).toBe(2);
    expect(sample(scrape, 'amqp_retry_publishes_rejected_total', { kind: 'publish' })).toBe(1);
    expect(sample(scrape, 'amqp_retry_consumers_up', { queue })).toBe(1);
    expect(sample(scrape, 'amqp_retry_connection_up', { role: 'consume' })).toBe(1);
    expect(sample(scrape, 'amqp_retry_connection_up', { role: 'publish' })).toBe(1);
    expect(await broker.count(`${queue}.error`)).toBe(2);
    // The queue's state: a series from its first consumer (0, running), then each change (3, paused) and its count.
    expect(sample(scrape, 'amqp_retry_queue_state', { queue })).toBe(0);
    const engine = app.get(RetryEngine);
    engine.pause(queue, { by: 'ops' });
    const paused = (await get(metrics)).text;
    expect(sample(paused, 'amqp_retry_queue_state', { queue })).toBe(3);
    expect(sample(paused, 'amqp_retry_queue_state_changes_total', { queue, to: 'paused' })).toBe(1);
    engine.resume(queue, { by: 'ops' });
    expect(sample((await get(metrics)).text, 'amqp_retry_queue_state', { queue })).toBe(0);
    if (process.env.PRINT_SCRAPE) console.log(scrape);
  });

  it('reports both connections and the consumer down after app.close(), without a connection-lost line', async () => {
    const { queue } = suite;
    const registry = new Registry();
    const Handler = handlerFor({ queue }, () => undefined);
    const lines: string[] = [];
    const logger = { log: () => undefined, error: (m: unknown) => lines.push(String(m)), warn: (m: unknown) => lines.push(String(m)) };
    const started = await startHealthApp({ ...TEST_OPTIONS, delayedDelivery: false, metrics: { registry } }, { providers: [Handler] });
    const app = (suite.app = started.app);
    app.useLogger(logger);
    const up = await registry.metrics();
    expect(sample(up, 'amqp_retry_connection_up', { role: 'consume' })).toBe(1);
    expect(sample(up, 'amqp_retry_connection_up', { role: 'publish' })).toBe(1);
    await app.close();
    const down = await registry.metrics();
    expect(sample(down, 'amqp_retry_consumers_up', { queue })).toBe(0);
    expect(sample(down, 'amqp_retry_connection_up', { role: 'consume' })).toBe(0);
    expect(sample(down, 'amqp_retry_connection_up', { role: 'publish' })).toBe(0);
    expect(lines.filter((line) => /Lost the connection/.test(line))).toEqual([]);
  });

  it('registers nothing in the default registry when metrics are off', async () => {
    const { queue } = suite;
    const Handler = handlerFor({ queue }, () => undefined);
    suite.app = (await startHealthApp(TEST_OPTIONS, { providers: [Handler] })).app;
    const { register } = await import('prom-client');
    expect(register.getMetricsAsArray().filter((m) => String(m.name).startsWith('amqp_retry_'))).toEqual([]);
  });
});
