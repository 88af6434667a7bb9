import type { INestApplication } from '@nestjs/common';
import { NonRetryableError } from 'nestjs-amqp-retry';
import { readFile } from 'node:fs/promises';
import type { BrowserContext, Page } from 'playwright-core';
import { handlerFor, handlerOf } from '../support/app.js';
import { launchBrowser } from '../support/browser.js';
import { uniqueName, waitFor, type TestBroker } from '../support/broker.js';
import { BearerGuard, OPERATOR_AUTHORIZATION, startDashboardApp } from '../support/dashboard-app.js';
import { useSuite } from '../support/suite.js';

/** A payload fails with its `error` until its id is in `fixed`; `fatal` failures are not retried. */
interface Payload {
  id: number;
  error?: string;
  fatal?: boolean;
}

/** Marks for the page: set by markup that must never run, and by CSP violations that would show markup was injected. */
const XSS_PROBE = `window.__xss = [];
document.addEventListener('securitypolicyviolation', (e) => window.__xss.push('csp:' + e.violatedDirective));`;

describe('parked-messages page in headless Chromium', () => {
  let browser: { context: BrowserContext; close: () => Promise<void> } | undefined; // undefined when Chromium could not start
  const suite = useSuite<INestApplication>('e2e.page', { afterAll: () => browser?.close() });
  let broker: TestBroker;
  let exchange: string;
  let fixed: Set<number>;

  beforeAll(async () => {
    browser = await launchBrowser();
    await browser.context.setExtraHTTPHeaders({ authorization: OPERATOR_AUTHORIZATION });
    await browser.context.addInitScript(XSS_PROBE);
  });
  beforeEach(() => {
    broker = suite.broker;
    exchange = uniqueName('e2e.page.x');
    suite.extraExchanges.push(exchange);
    fixed = new Set();
  });

  /** A handler on `<prefix>.<id>` bound to key `routingKey`: two attempts (after `delay` ms), then parked (at once when `fatal`). */
  function handlerOn(prefix: string, routingKey: string, delay = 100) {
    const queue = suite.retryQueue(uniqueName(prefix));
    const Handler = handlerFor({ queue, exchange, routingKey, delays: [delay], maxAttempts: 2 }, (payload) => {
      const { id, error, fatal } = payload as Payload;
      if (error && !fixed.has(id)) throw fatal ? new NonRetryableError(error) : new Error(error);
    });
    return { queue, Handler };
  }

  async function start(handlers: ReturnType<typeof handlerOn>[], dashboard: Parameters<typeof startDashboardApp>[1] = { guard: BearerGuard }) {
    const started = await startDashboardApp(
      handlers.map((h) => h.Handler),
      dashboard,
    );
    suite.app = started.app;
    return started.url;
  }

  const parkedIn = (queue: string, n: number) =>
    waitFor(async () => (await broker.count(`${queue}.error`)) === n, `${n} parked in ${queue}.error`, 20_000);

  async function openPage(url: string, queue?: string): Promise<Page> {
    const page = await browser!.context.newPage();
    await page.goto(`${url}/retry`);
    await page.locator('#status', { hasText: /Updated|Could not/ }).waitFor();
    if (queue) {
      await page.locator(`tr[data-queue="${queue}"] button.link`).click();
      await page.locator('#status', { hasText: /Updated|Could not/ }).waitFor();
    }
    expect(await page.locator('#status').textContent()).toMatch(/^Updated/);
    return page;
  }

  const texts = (page: Page, selector: string) => page.locator(selector).evaluateAll((nodes) => nodes.map((n) => (n.textContent ?? '').trim()));

  /** Clicks a button, then Confirm in the confirmation dialog, and waits for the page's report. */
  async function confirm(page: Page, button: ReturnType<Page['locator']>, expectText: string, report: string | RegExp) {
    await button.click();
    await page.locator('#confirm-text', { hasText: expectText }).waitFor();
    await page.locator('#confirm-ok').click();
    await page.locator('#status', { hasText: report }).waitFor({ timeout: 20_000 });
  }

  it('lists every handler queue with its depths, groups parked messages by reason and error, and replays one then the rest', async () => {
    const payments = handlerOn('e2e.payments', 'order.paid');
    const shipping = handlerOn('e2e.shipping', 'order.shipped');
    const invoices = handlerOn('e2e.invoices', 'invoice.due', 60_000); // a failure waits a minute in its tier
    const url = await start([payments, shipping, invoices]);
    for (const id of [1, 2]) await broker.publish(exchange, 'order.paid', { id, error: 'payment gateway timeout' });
    await broker.publish(exchange, 'order.paid', { id: 3, error: 'card expired', fatal: true });
    await broker.publish(exchange, 'order.shipped', { id: 4, error: 'no carrier for postcode', fatal: true });
    await broker.publish(exchange, 'invoice.due', { id: 5, error: 'mail server busy' });
    await broker.publish(exchange, 'invoice.due', Buffer.from('{"id": 6, "total": 12.5'), { messageId: 'inv-6' }); // cut short
    await parkedIn(payments.queue, 3);
    await parkedIn(shipping.queue, 1);
    await parkedIn(invoices.queue, 1);

    const page = await openPage(url, payments.queue);
    const row = (queue: string) => texts(page, `tr[data-queue="${queue}"] > *`);
    // Queue, state, ready, in flight, waiting in tiers, parked, rates (test/dashboard-glance checks the live columns).
    const rates = expect.stringMatching(/^handled .+retried .+parked .+$/);
    expect(await row(payments.queue)).toEqual([
      payments.queue,
      'consuming (1)',
      '0',
      '0',
      '100ms 0', // a tier reads by its delay
      '3',
      rates,
    ]);
    expect(await row(shipping.queue)).toEqual([
      shipping.queue,
      'consuming (1)',
      '0',
      '0',
      '100ms 0', // a tier reads by its delay
      '1',
      rates,
    ]);
    expect(await row(invoices.queue)).toEqual([invoices.queue, 'consuming (1)', '0', '0', '1m 1', '1', rates]);
    expect(await texts(page, '#by-reason button')).toEqual(['exhausted2', 'non-retryable1']);
    expect(await texts(page, '#by-error button')).toEqual(['payment gateway timeout2', 'card expired1']);
    expect(await page.locator('#messages li.message').count()).toBe(3);
    if (process.env.DASHBOARD_SCREENSHOT) await page.screenshot({ path: process.env.DASHBOARD_SCREENSHOT, fullPage: true });

    // Export what is listed: JSON lines, one view per parked message, all left parked.
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#export-filtered').click()]);
    expect(download.suggestedFilename()).toBe(`${payments.queue}.error.jsonl`);
    const exported = (await readFile(await download.path(), 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { reason: string; body: string });
    expect(exported.map((v) => [v.reason, JSON.parse(v.body).id]).sort()).toEqual([
      ['exhausted', 1],
      ['exhausted', 2],
      ['non-retryable', 3],
    ]);
    await page.locator('#status', { hasText: `Exported 3 messages from ${payments.queue}.error (left parked).` }).waitFor();
    await parkedIn(payments.queue, 3);

    // A group narrows the list; replay its one message from the page once the cause is fixed.
    await page.locator('#by-error button', { hasText: 'card expired' }).click();
    await page.locator('#list-summary', { hasText: 'of 1 matching' }).waitFor();
    const handler = handlerOf(suite.app!, payments.Handler);
    const callsBefore = handler.calls.length;
    fixed.add(3);
    await confirm(
      page,
      page.locator('#messages li.message button.replay-one'),
      `Replay this message to ${payments.queue}`,
      'Replayed 1 of 1 matching.',
    );
    await waitFor(() => handler.calls.length === callsBefore + 1, 'the replayed message to reach the handler');
    expect(handler.calls.at(-1)).toMatchObject({ payload: { id: 3, error: 'card expired', fatal: true }, attempt: 1 }); // fresh attempts
    await parkedIn(payments.queue, 2); // ready again once the page's reload has browsed them

    // The exhausted group: its detail shows the death history; replay one selected, then all that still match.
    await page.locator('#by-reason button', { hasText: 'exhausted' }).click();
    await page.locator('#list-summary', { hasText: 'of 2 matching' }).waitFor();
    const first = page.locator('#messages li.message').first();
    const firstId = JSON.parse((await first.locator('pre.preview').textContent()) ?? '{}').id as number;
    await first.locator('button.open').click();
    await page.locator('#detail[open]').waitFor();
    const deaths = JSON.parse((await page.locator('#detail-deaths').textContent()) ?? '[]') as Array<{
      queue: string;
      reason: string;
      count: number;
    }>;
    expect(deaths.find((d) => d.queue === payments.queue)).toMatchObject({ reason: 'rejected', count: 1 }); // 2 attempts: 1 rejection before
    await page.locator('#detail-close').click();
    fixed.add(1).add(2);
    await first.locator('input[type=checkbox]').check();
    await confirm(page, page.locator('#replay-selected'), 'Replay 1 selected message with fresh attempts?', 'Replayed 1 of 1 matching.');
    await parkedIn(payments.queue, 1);
    expect(handler.calls.some((c) => (c.payload as Payload).id === firstId && c.attempt === 1 && c.at > Date.now() - 20_000)).toBe(true);
    await page.locator('#list-summary', { hasText: 'of 1 matching' }).waitFor();
    await confirm(page, page.locator('#replay-filtered'), `Replay all 1 message parked in ${payments.queue}.error`, 'Replayed 1 of 1 matching.');
    await parkedIn(payments.queue, 0);
    await waitFor(() => handler.calls.filter((c) => c.attempt === 1).length === 6, 'the two replays to be handled');
    expect(await row(payments.queue)).toEqual([payments.queue, expect.any(String), '0', '0', expect.any(String), '0', expect.any(String)]);
    expect(await page.locator('#list-summary').textContent()).toBe('No parked message matches.');
    // The other queue's parked message was left alone.
    expect(await broker.count(`${shipping.queue}.error`)).toBe(1); // nothing browses it: the page shows the payments queue
    expect(await page.evaluate('window.__xss')).toEqual([]);
    await page.close();
  });

  it('shows markup in bodies, headers and errors as text: nothing of it runs, and edit-and-replay sends the corrected body', async () => {
    const payments = handlerOn('e2e.xss', 'order.paid');
    const url = await start([payments]);
    const hostile = {
      id: 7,
      note: '<img src=x onerror="window.__xss.push(\'img\')">',
      html: "<script>window.__xss.push('script')</script>",
      error: '<img src=y onerror="window.__xss.push(\'error\')">',
      fatal: true,
    };
    const body = JSON.stringify(hostile);
    await broker.publish(exchange, 'order.paid', Buffer.from(body), { headers: { 'x-note': '<svg onload="window.__xss.push(\'header\')">' } });
    await parkedIn(payments.queue, 1);

    const page = await openPage(url, payments.queue);
    expect(await page.locator('#messages .error').textContent()).toBe(hostile.error);
    await page.locator('#history svg.hour').waitFor({ state: 'attached', timeout: 20_000 }); // the page's own charts are drawn too
    await page.locator('#messages button.open').click();
    await page.locator('#detail[open]').waitFor();
    expect(await page.locator('#detail-body').textContent()).toBe(body);
    expect(await page.locator('#detail-headers dd[data-header="x-note"]').textContent()).toBe('<svg onload="window.__xss.push(\'header\')">');
    expect(await page.locator('img, svg:not([data-chart]), body script:not([src])').count()).toBe(0); // the rate charts are the page's own
    expect(await page.locator('script').count()).toBe(1); // the page's own
    expect(await page.evaluate('window.__xss')).toEqual([]);

    // Correct the body and replay it; the handler gets the corrected one, the parking queue empties.
    const corrected = { id: 7, note: 'fixed by ops' };
    await page.locator('#detail-edit').click();
    expect(await page.locator('#edit-body').inputValue()).toBe(body);
    await page.locator('#edit-body').fill(JSON.stringify(corrected));
    await confirm(page, page.locator('#detail-send-edit'), 'with the corrected body', 'Replayed 1 of 1 matching.');
    await parkedIn(payments.queue, 0);
    const handler = handlerOf(suite.app!, payments.Handler);
    await waitFor(
      () => handler.calls.some((c) => (c.payload as Payload).id === 7 && !('error' in (c.payload as object))),
      'the corrected body to be handled',
    );
    expect(handler.calls.at(-1)).toMatchObject({ payload: corrected, attempt: 1 });
    expect(await page.evaluate('window.__xss')).toEqual([]);
    await page.close();
  });

  it('purges only after confirmation, and says plainly when the page is open', async () => {
    const payments = handlerOn('e2e.purge', 'order.paid');
    const url = await start([payments], { allowUnauthenticated: true });
    for (const id of [1, 2]) await broker.publish(exchange, 'order.paid', { id, error: 'bad address', fatal: true });
    await parkedIn(payments.queue, 2);

    const page = await openPage(url, payments.queue);
    expect(await page.locator('#open-banner').textContent()).toContain('This page is open.');
    await page.locator('#messages li.message input[type=checkbox]').first().check();
    await page.locator('#purge-selected').click();
    await page.locator('#confirm-text', { hasText: 'Purge 1 selected message? They are deleted for good.' }).waitFor();
    await page.locator('#confirm-cancel').click();
    await page.locator('#status', { hasText: 'Cancelled.' }).waitFor();
    await parkedIn(payments.queue, 2); // ready again once the page's reload has browsed them

    await confirm(page, page.locator('#purge-selected'), 'Purge 1 selected message?', 'Purged 1 of 1 matching.');
    await parkedIn(payments.queue, 1);
    await confirm(page, page.locator('#purge-filtered'), `Purge all 1 message parked in ${payments.queue}.error`, 'Purged 1 of 1 matching.');
    await parkedIn(payments.queue, 0);
    expect(handlerOf(suite.app!, payments.Handler).calls.length).toBe(2); // purged, never replayed
    await page.close();
  });

  it("acts on a failure group as the filter counted it: the count confirmed is the count purged, the group's others stay parked", async () => {
    const payments = handlerOn('e2e.group', 'order.paid');
    const url = await start([payments], { allowUnauthenticated: true });
    for (const id of [1, 2, 3, 4, 5]) {
      await broker.publish(exchange, 'order.paid', { id, error: 'bad address', fatal: true, zone: id <= 2 ? 'north' : 'south' });
    }
    await parkedIn(payments.queue, 5);

    const page = await openPage(url, payments.queue);
    const group = page.locator('#failure-groups li.failure-group', { hasText: 'bad address' });
    await group.locator('[data-col="count"]', { hasText: /^5$/ }).waitFor();
    await page.locator('#f-text').fill('"zone":"north"');
    await page.locator('#filter button[type=submit]').click();
    await page.locator('#list-summary', { hasText: 'of 2 matching' }).waitFor();
    await group.locator('[data-col="count"]', { hasText: /^2$/ }).waitFor();
    await confirm(
      page,
      group.locator('[data-action="purge"]'),
      'Purge the 2 messages of "bad address" that match the filter',
      /^Purged 2 of 2 of the group\.$/,
    );
    await parkedIn(payments.queue, 3);
    await page.locator('#group-history li[data-group-action]', { hasText: 'purged 2 of 2' }).waitFor();
    // Those left are the ones the filter left out.
    await page.locator('#clear-filter').click();
    await page.locator('#list-summary', { hasText: 'of 3 matching' }).waitFor();
    const left = await texts(page, '#messages li.message pre.preview');
    expect(left.map((body) => (JSON.parse(body) as { zone: string }).zone)).toEqual(['south', 'south', 'south']);
    await page.close();
  });

  it('pages through 55 parked messages, 50 at a time, and steps back when its page empties', async () => {
    const payments = handlerOn('e2e.pages', 'order.paid');
    const url = await start([payments]);
    for (let id = 1; id <= 55; id++) await broker.publish(exchange, 'order.paid', { id, error: 'bad address', fatal: true });
    await parkedIn(payments.queue, 55);

    const page = await openPage(url, payments.queue);
    expect(await page.locator('#list-summary').textContent()).toBe('Showing 1–50 of 55 matching.');
    expect(await page.locator('#messages li.message').count()).toBe(50);
    await page.locator('#next').click();
    await page.locator('#list-summary', { hasText: 'Showing 51–55 of 55 matching.' }).waitFor();
    expect(await texts(page, '#messages pre.preview')).toEqual(
      [51, 52, 53, 54, 55].map((id) => JSON.stringify({ id, error: 'bad address', fatal: true })),
    );
    expect(await page.locator('#page-info').textContent()).toBe('Page 2 of 2');

    for (const box of await page.locator('#messages li.message input[type=checkbox]').all()) await box.check();
    await confirm(page, page.locator('#purge-selected'), 'Purge 5 selected messages?', 'Purged 5 of 5 matching.');
    // A refresh of the page's own can overtake the purge's reload: the list follows as soon as the newer load answers.
    await page.locator('#list-summary', { hasText: 'Showing 1–50 of 50 matching.' }).waitFor({ timeout: 10_000 });
    await parkedIn(payments.queue, 50);
    await page.close();
  });

  it('works under the application global prefix: assets and API calls follow the path the page was served at', async () => {
    const payments = handlerOn('e2e.prefix', 'order.paid');
    const started = await startDashboardApp([payments.Handler], { guard: BearerGuard }, undefined, 'internal');
    suite.app = started.app;
    await broker.publish(exchange, 'order.paid', { id: 1, error: 'card expired', fatal: true });
    await parkedIn(payments.queue, 1);
    const page = await browser!.context.newPage();
    await page.goto(`${started.url}/internal/retry/`);
    await page.locator('#status', { hasText: 'Updated' }).waitFor();
    await page.locator(`tr[data-queue="${payments.queue}"] button.link`).click();
    await page.locator('#status', { hasText: 'Updated' }).waitFor();
    expect(await texts(page, '#messages .error')).toEqual(['card expired']);
    const ours = started.served.filter((s) => s.path !== '/favicon.ico'); // the browser's own guess
    expect(ours.filter((s) => s.status !== 200)).toEqual([]);
    expect(new Set(ours.map((s) => s.path.split('?')[0].split('/').slice(0, 4).join('/')))).toEqual(
      new Set(['/internal/retry/', '/internal/retry/assets', '/internal/retry/api']),
    );
    await page.close();
  });

  it('fits a phone screen: no sideways scrolling, queues as cards', async () => {
    const payments = handlerOn('e2e.phone', 'order.paid');
    const url = await start([payments]);
    await broker.publish(exchange, 'order.paid', {
      id: 1,
      error: 'a long exception message that must wrap on a narrow screen rather than widen it',
      fatal: true,
    });
    await parkedIn(payments.queue, 1);
    const page = await browser!.context.newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${url}/retry`);
    await page.locator('#status', { hasText: 'Updated' }).waitFor();
    await page.locator(`tr[data-queue="${payments.queue}"] button.link`).click();
    await page.locator('#status', { hasText: 'Updated' }).waitFor();
    expect(await page.locator('#messages li.message').count()).toBe(1);
    const layout = await page.evaluate(`({
      overflow: document.documentElement.scrollWidth - window.innerWidth,
      headerHidden: getComputedStyle(document.querySelector('#queues thead')).display === 'none',
    })`);
    if (process.env.DASHBOARD_PHONE_SCREENSHOT) await page.screenshot({ path: process.env.DASHBOARD_PHONE_SCREENSHOT, fullPage: true });
    expect(layout).toEqual({ overflow: 0, headerHidden: true });
    await page.close();
  });
});
