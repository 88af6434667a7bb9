import { type ChildProcess, fork } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { buildLibrary } from '../chaos/consumer-process.js';
import { launchBrowser } from '../support/browser.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

/** Screenshots for the README and docs, written only when UPDATE_SCREENSHOTS=1 (CI leaves the committed ones alone). */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? new URL('../../docs/images/', import.meta.url).pathname : undefined;
const INTERVAL_MS = 500; // the instances' heartbeat interval (console-instance.mjs)
const MISSED_BEATS = 3;

interface Fleet {
  summary: { up: number; gone: number; breakersOpen: string[] };
}

/** Starts one instance in a child process and resolves with its port once it listens. */
function startInstance(env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  const output = process.env.CHAOS_VERBOSE ? 'inherit' : 'ignore';
  const child = fork(new URL('./console-instance.mjs', import.meta.url).pathname, [], {
    env: { ...process.env, ...env },
    stdio: ['ignore', output, output, 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (message: { port: number }) => resolve({ child, port: message.port }));
    child.once('exit', (code) => reject(new Error(`console-instance.mjs exited with ${code} before it listened`)));
  });
}

const stop = (child: ChildProcess, signal: NodeJS.Signals) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill(signal);
  });

describe('the retry console across three instances in separate processes, in headless Chromium', () => {
  const suite = useSuite('e2e.console.orders');
  const application = uniqueName('e2e-console');

  beforeAll(() => buildLibrary(), 180_000);

  const shoot = async (page: Page, name: string) => {
    if (!SCREENSHOTS) return;
    await mkdir(SCREENSHOTS, { recursive: true });
    // From the top: a full-page shot of a scrolled page draws the sticky header where the scroll left it.
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
  };

  it('after an outage and a poison burst, a fresh page shows the hour, the instances, the cause, the groups; a group replays once; a message is found by id', async () => {
    const { broker, queue: orders } = suite;
    const payments = suite.retryQueue(uniqueName('e2e.console.payments'));
    const results = uniqueName('e2e.console.results');
    suite.extraQueues.push(results);
    await broker.declareQueue(results);
    const env = { CONSOLE_URL: AMQP_URL, CONSOLE_APP: application, CONSOLE_QUEUE: orders, CONSOLE_OUTAGE_QUEUE: payments, CONSOLE_RESULTS: results };
    const instances = [];
    for (let i = 0; i < 3; i++) {
      const instance = await startInstance(env);
      suite.clients.push({ close: () => stop(instance.child, 'SIGKILL') }); // killed after the test, before its queues go
      instances.push(instance);
    }
    const base = `http://127.0.0.1:${instances[0].port}/retry`;
    const fleet = async () => (await (await fetch(`${base}/api/fleet`)).json()) as Fleet;
    await waitFor(async () => (await fleet()).summary.up === 3, 'three instances up');

    const now = () => Math.floor(Date.now() / 1000);
    for (let i = 0; i < 60; i++)
      await broker.publish('', orders, { id: i }, { messageId: `order-${i}`, correlationId: `ticket-${i}`, timestamp: now() });
    for (let i = 100; i < 106; i++)
      await broker.publish('', orders, { id: i, poison: true }, { messageId: `order-${i}`, correlationId: `ticket-${i}`, timestamp: now() });
    for (let i = 0; i < 12; i++) await broker.publish('', payments, { id: i }, { messageId: `payment-${i}`, timestamp: now() });
    await waitFor(async () => (await broker.count(`${orders}.error`)) === 6, 'the six poison orders parked', 20_000);
    await waitFor(async () => (await fleet()).summary.breakersOpen.includes(payments), "the payments queue's breaker open", 20_000);

    // Counts reach the page with the next beat: a killed instance loses at most its last interval's, so wait for them.
    const parkedInHistory = async () => {
      const { queues } = (await (await fetch(`${base}/api/history`)).json()) as {
        queues: Array<{ queue: string; points: Array<{ parked: number }> }>;
      };
      return queues.find((q) => q.queue === orders)?.points.reduce((n, p) => n + p.parked, 0) ?? 0;
    };
    await waitFor(async () => (await parkedInHistory()) === 6, 'the six parked in the history');
    const killedAt = Date.now();
    await stop(instances[2].child, 'SIGKILL');
    await waitFor(async () => (await fleet()).summary.gone === 1, 'the killed instance shown gone', 10_000);
    expect(Date.now() - killedAt).toBeLessThanOrEqual(MISSED_BEATS * INTERVAL_MS + 1_000); // the stated bound, and a poll's slack

    const browser = await launchBrowser();
    try {
      const page = await browser.context.newPage();
      await page.goto(base);
      expect(await page.title()).toBe('Retry console');
      await page.locator('#status', { hasText: /^Updated/ }).waitFor();
      // Every instance, one killed, shown gone.
      await page.locator('[data-strip="instances"]', { hasText: '2 up · 1 gone' }).waitFor();
      expect(await page.locator('#instances tbody tr').count()).toBe(3);
      expect(await page.locator('#instances tbody tr.gone').count()).toBe(1);
      expect(await page.locator('#instances tr.gone [data-col="status"]').textContent()).toMatch(/^gone since \d/);
      // The last hour, shown at once: every instance's counts and the timings.
      const hour = page.locator(`#history tr[data-history="${orders}"]`);
      await hour.waitFor();
      expect(Number((await hour.locator('[data-count="handled"]').textContent())?.split(' ')[0])).toBeGreaterThanOrEqual(60);
      expect(await hour.locator('[data-count="parked"]').textContent()).toBe('6 parked');
      expect(await hour.locator('[data-timing="processing"]').textContent()).toMatch(/^processing \d/);
      expect(await hour.locator('[data-timing="critical"]').textContent()).toMatch(/^critical \d/);
      // The breaker's cause: the error that opened it, when, its trials and the next one.
      const cause = page.locator('#instances .cause', { hasText: payments }).first();
      await cause.waitFor();
      expect(await cause.textContent()).toMatch(
        /opened .* ago .*: 3 calls in a row failed.*, last error: connect ECONNREFUSED 10.0.0.7:443; (no trial yet|\d+ failed trials?); next trial in/,
      );
      expect(await page.locator('[data-strip="breakers"] .strip-value').textContent()).not.toBe('0');
      // The failure groups of the orders' parking queue, with first and last seen.
      await page.locator(`#queues tr[data-queue="${orders}"] button.link`).click();
      const group = page.locator('#failure-groups li.failure-group', { hasText: 'refused by payments' });
      await group.waitFor();
      expect(await group.locator('.fg-error').textContent()).toBe('order <n> refused by payments at <ip>');
      expect(await group.locator('[data-col="count"]').textContent()).toBe('6');
      expect(await group.locator('[data-col="first-seen"]').textContent()).toMatch(/^first \S+ \d/);
      expect(await group.locator('[data-col="last-seen"]').textContent()).toMatch(/^last \S+ \d/);
      await shoot(page, 'console');

      // A message by its id, and its timeline.
      await page.locator('#search-id').fill('order-103');
      await page.keyboard.press('Enter');
      const found = page.locator('#search-results li[data-found]');
      await found.waitFor();
      expect(await found.count()).toBe(1);
      await found.locator('button').focus();
      await page.keyboard.press('Enter');
      const timeline = page.locator('#detail-timeline li');
      await timeline.last().waitFor();
      expect(await timeline.last().textContent()).toContain('parked (non-retryable)');
      expect(await timeline.last().textContent()).toContain('order 103 refused by payments');
      await shoot(page, 'console-message');
      await page.keyboard.press('Escape');

      // Replay the group in one confirmed action: each message comes back once, and the action is recorded.
      await group.locator('[data-action="replay"]').click();
      await page.locator('#confirm-ok').click();
      await page.locator('#status', { hasText: /^Replayed 6 of 6 of the group/ }).waitFor({ timeout: 20_000 });
      const handled = await broker.take(results, 6, 20_000);
      const ids = handled.map((m) => (JSON.parse(m.content.toString()) as { id: number }).id).sort();
      expect(ids).toEqual([100, 101, 102, 103, 104, 105]);
      await waitFor(async () => (await broker.count(`${orders}.error`)) === 0, 'the parking queue emptied');
      await page.locator('#group-history li[data-group-action]', { hasText: 'replayed 6 of 6' }).waitFor();

      await page.setViewportSize({ width: 390, height: 844 }); // a phone
      await page.locator('#strip').waitFor();
      // Nothing sticks out to the right: the page does not scroll sideways, and the elements whose content would are named.
      const outside = await page.evaluate(() => {
        type Box = {
          id: string;
          className: unknown;
          tagName: string;
          scrollWidth: number;
          clientWidth: number;
          getBoundingClientRect(): { right: number };
        };
        const doc = (globalThis as unknown as { document: { documentElement: Box; querySelectorAll(s: string): ArrayLike<Box> } }).document;
        const width = doc.documentElement.clientWidth;
        const named = Array.from(doc.querySelectorAll('body *'))
          .filter(
            (n) =>
              n.getBoundingClientRect().right > width + 1 ||
              (n.clientWidth > 0 && n.scrollWidth > n.clientWidth + 1 && !/table-wrap|^pre$/i.test(`${String(n.className)}${n.tagName}`)),
          )
          .map((n) => `${n.tagName.toLowerCase()}#${n.id}.${String(n.className)} ${n.scrollWidth}/${n.clientWidth}`);
        return { overflow: doc.documentElement.scrollWidth - width, named };
      });
      expect(outside).toEqual({ overflow: 0, named: [] });
      await shoot(page, 'console-phone');
    } finally {
      await browser.close();
    }
  }, 120_000);
});
