import { NonRetryableError, planDelayTopology, RetryEngine, retryTopologyNames } from 'nestjs-amqp-retry';
import type { Page } from 'playwright-core';
import { handlerFor, TEST_OPTIONS } from '../support/app.js';
import { ctl } from '../support/broker-control.js';
import { launchBrowser } from '../support/browser.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { BearerGuard, OPERATOR_AUTHORIZATION, startDashboardApp } from '../support/dashboard-app.js';
import { useSuite } from '../support/suite.js';

/** What the broker says of a queue: ready, and taken by a consumer but not yet acked. */
async function brokerFigures(queue: string): Promise<{ ready: string; unacked: string }> {
  const lines = (await ctl('list_queues', '-q', '--no-table-headers', 'name', 'messages_ready', 'messages_unacknowledged')).split('\n');
  const line = lines.map((l) => l.split('\t')).find(([name]) => name === queue);
  if (!line) throw new Error(`rabbitmqctl does not list ${queue}`);
  return { ready: line[1].trim(), unacked: line[2].trim() };
}

const texts = (page: Page, selector: string) => page.locator(selector).evaluateAll((nodes) => nodes.map((n) => (n.textContent ?? '').trim()));

/**
 * The page answers an operator's first questions at a glance: per handler queue what is ready, in flight, waiting in
 * each tier and parked (the broker's own figures), the rates of handled, retried and parked messages, refreshed by
 * itself until paused; the delay ladder apart; no request of the page fails (its icon included).
 */
describe('the parked-messages page at a glance, in headless Chromium', () => {
  let release: () => void = () => undefined;
  afterEach(() => release()); // before the suite's cleanup: the held handlers return, and the app closes at once
  let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined; // undefined when Chromium could not start
  const suite = useSuite('e2e.glance.busy', { afterAll: () => browser?.close() });

  beforeAll(async () => {
    browser = await launchBrowser();
    await browser.context.setExtraHTTPHeaders({ authorization: OPERATOR_AUTHORIZATION });
  });

  it("shows each queue's ready, in-flight, tier and parked counts as the broker has them, and the rates, refreshing until paused", async () => {
    const { broker, queue: busy } = suite;
    const flaky = suite.retryQueue(uniqueName('e2e.glance.flaky'));
    const exchange = uniqueName('e2e.glance.x');
    suite.extraExchanges.push(exchange);
    const prefix = suite.ladder();
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Holds each message until released: 3 in flight (prefetch), the rest ready.
    const Busy = handlerFor({ queue: busy, exchange, routingKey: 'job.busy', delays: [100], prefetch: 3 }, () => gate);
    // Fails `retry` messages (they wait a minute in the tier), parks `fatal` ones, handles the rest.
    const Flaky = handlerFor({ queue: flaky, exchange, routingKey: 'job.flaky', delays: [60_000], maxAttempts: 2 }, (payload) => {
      const { kind } = payload as { kind: string };
      if (kind === 'fatal') throw new NonRetryableError('card expired');
      if (kind === 'retry') throw new Error('gateway busy');
    });
    const started = await startDashboardApp([Busy, Flaky], { guard: BearerGuard }, undefined, undefined, {
      ...TEST_OPTIONS,
      delayedDelivery: { prefix },
    });
    suite.app = started.app;
    const ladder = planDelayTopology(prefix);
    const flakyTier = retryTopologyNames(flaky, { delays: [60_000] }).tiers[0];

    for (let i = 0; i < 5; i++) await broker.publish(exchange, 'job.busy', { i });
    for (const kind of ['retry', 'retry', 'fatal', 'ok', 'ok']) await broker.publish(exchange, 'job.flaky', { kind });
    await waitFor(async () => (await brokerFigures(busy)).unacked === '3', '3 busy messages in flight', 20_000);
    await waitFor(
      async () => (await broker.count(flakyTier)) === 2 && (await broker.count(`${flaky}.error`)) === 1,
      'two waiting, one parked',
      20_000,
    );

    const failed: string[] = [];
    const queueReads: number[] = [];
    const page = await browser!.context.newPage();
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    page.on('request', (request) => {
      if (request.url().endsWith('/api/queues')) queueReads.push(Date.now());
    });
    await page.goto(`${started.url}/retry`);
    await page.locator('#status', { hasText: /^Updated/ }).waitFor();

    /** A row as shown: queue, state, ready, in flight, tiers, parked. */
    const row = async (queue: string) => (await texts(page, `#queues tr[data-queue="${queue}"] > *`)).slice(0, 6);
    /** A tier reads by its delay ("1m", "100ms"); its full name is the chip's title. */
    const tierChip = (queue: string) => `${queue === flaky ? '1m' : '100ms'} `;
    /** The row the broker's figures call for, now. */
    const expected = async (queue: string) => {
      const { ready, unacked } = await brokerFigures(queue);
      const tier = retryTopologyNames(queue, { delays: queue === flaky ? [60_000] : [100] }).tiers[0];
      return [queue, 'consuming (1)', ready, unacked, `${tierChip(queue)}${await broker.count(tier)}`, String(await broker.count(`${queue}.error`))];
    };
    expect(await row(busy)).toEqual(await expected(busy));
    expect(await row(flaky)).toEqual(await expected(flaky));
    expect(await row(busy)).toEqual([busy, 'consuming (1)', '2', '3', `${tierChip(busy)}0`, '0']); // and they are what was made
    expect(await row(flaky)).toEqual([flaky, 'consuming (1)', '0', '0', `${tierChip(flaky)}2`, '1']);

    // No partitioned handler here: no Partitions section.
    expect(await page.locator('#partitions-section').isHidden()).toBe(true);

    // The delay ladder's ready queue is not a handler queue: it has a table of its own.
    expect(await page.locator(`#queues tr[data-queue="${ladder.readyQueue}"]`).count()).toBe(0);
    expect(await texts(page, `#ladders tr[data-ladder="${ladder.readyQueue}"] > *`)).toEqual([ladder.readyQueue, 'consuming (1)', '0', '0', '0']);

    // Nothing clicked from here on: the page refreshes by itself. Released, the busy queue empties and its rate shows.
    release();
    await waitFor(async () => (await brokerFigures(busy)).unacked === '0' && (await brokerFigures(busy)).ready === '0', 'busy drained', 20_000);
    await page.locator(`#queues tr[data-queue="${busy}"] td[data-col="in-flight"]`, { hasText: /^0$/ }).waitFor({ timeout: 15_000 });
    await page.locator(`#queues tr[data-queue="${busy}"] td[data-col="ready"]`, { hasText: /^0$/ }).waitFor({ timeout: 15_000 });
    expect(await row(busy)).toEqual(await expected(busy));
    const handledRate = page.locator(`#queues tr[data-queue="${busy}"] [data-rate="handled"] .rate-value`);
    await waitFor(async () => /^[1-9][\d.]*\/min$/.test((await handledRate.textContent()) ?? ''), 'a handled rate for the busy queue', 20_000);
    expect(await page.locator(`#queues tr[data-queue="${busy}"] [data-rate="handled"] polyline`).getAttribute('points')).toMatch(
      /^[\d.]+,[\d.]+( [\d.]+,[\d.]+)+$/,
    );

    // Paused, it reads nothing more, and the broker's new figures do not show; resumed, they do, the list included.
    await page.locator('#auto-refresh').click();
    expect(await page.locator('#auto-refresh').getAttribute('aria-pressed')).toBe('true');
    expect(await page.locator('#refreshed').textContent()).toMatch(/^Auto-refresh paused/);
    const pausedAt = Date.now();
    await broker.publish(exchange, 'job.flaky', { kind: 'fatal' });
    await waitFor(async () => (await broker.count(`${flaky}.error`)) === 2, 'a second one parked', 20_000);
    await waitFor(() => Date.now() - pausedAt > 6_000, 'more than one refresh interval', 10_000);
    expect(queueReads.filter((at) => at > pausedAt)).toEqual([]);
    expect((await row(flaky))[5]).toBe('1');
    await page.locator('#auto-refresh').click();
    await page.locator(`#queues tr[data-queue="${flaky}"] td[data-col="parked"]`, { hasText: /^2$/ }).waitFor({ timeout: 15_000 });
    await page.locator('#messages li.message').nth(1).waitFor({ timeout: 15_000 }); // the list followed the new depth
    expect(await row(flaky)).toEqual(await expected(flaky));

    // A stack shows its line breaks, not "\n" escapes.
    await page.locator('#messages button.open').first().click();
    await page.locator('#detail[open]').waitFor();
    const stack = (await page.locator('#detail-headers dd[data-header="x-exception-stack"] pre').textContent()) ?? '';
    expect(stack).toMatch(/^NonRetryableError: card expired\n\s+at /);
    expect(stack).not.toContain('\\n');
    await page.locator('#detail-close').click();

    // The icon is served (no favicon 404), and no request of the page failed.
    const icon = await page.locator('link[rel="icon"]').getAttribute('href');
    const fetched = await page.request.get(new URL(icon ?? '', `${started.url}/retry`).toString());
    expect([fetched.status(), fetched.headers()['content-type']]).toEqual([200, expect.stringMatching(/^image\/svg\+xml/)]);
    expect(failed).toEqual([]);

    if (process.env.DASHBOARD_SCREENSHOT) {
      // For the README's picture: one queue paused by an operator, as the State column and Consumption show it.
      started.app.get(RetryEngine).pause(busy, { by: 'alice', reason: 'INC-142: payment API down' });
      await page.locator(`[data-flow-queue="${busy}"][data-state="paused"]`).waitFor({ timeout: 15_000 });
      await page.evaluate('window.scrollTo(0, 0)');
      await page.screenshot({ path: process.env.DASHBOARD_SCREENSHOT, fullPage: true });
    }
    await page.close();
  }, 120_000);
});
