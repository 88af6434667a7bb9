import { RetryEngine, type PartitionsStatus, type RetryHandlerOptions } from 'nestjs-amqp-retry';
import type { Page } from 'playwright-core';
import { handlerFor, startApp, TEST_OPTIONS } from '../support/app.js';
import { launchBrowser } from '../support/browser.js';
import { waitFor } from '../support/broker.js';
import { BearerGuard, OPERATOR_AUTHORIZATION, startDashboardApp } from '../support/dashboard-app.js';
import { usePartitionSuite } from '../support/partitions.js';

const texts = (page: Page, selector: string) => page.locator(selector).evaluateAll((nodes) => nodes.map((n) => (n.textContent ?? '').trim()));

/**
 * The page's Partitions section: for a partitioned handler, each partition queue, the instance that
 * owns it and its ready depth, as `RetryEngine.partitions()` has them; with two instances, the other one's partitions
 * are shown as its. Messages are held by the handler (prefetch 1), so that each partition keeps some ready.
 */
describe("the parked-messages page's partitions, in headless Chromium", () => {
  let release: () => void = () => undefined;
  afterEach(() => release()); // before the suite's cleanup: the held handlers return, and the apps close at once
  let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined; // undefined when Chromium could not start
  const suite = usePartitionSuite('e2e.partpage', 3, { afterAll: () => browser?.close() });

  beforeAll(async () => {
    browser = await launchBrowser();
    await browser.context.setExtraHTTPHeaders({ authorization: OPERATOR_AUTHORIZATION });
  });

  it('lists the 3 partitions with their owners and ready depths as the engine has them, and follows them by itself', async () => {
    const { broker, queue } = suite;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    const options = {
      queue,
      delays: ['200ms'],
      prefetch: 1,
      partitions: { count: 3, key: { header: 'x-key' }, heartbeat: '200ms' },
    } as RetryHandlerOptions;
    const hold = () => {
      started++;
      return gate;
    };
    const served = await startDashboardApp([handlerFor(options, hold)], { guard: BearerGuard });
    const app = (suite.app = served.app);
    const other = await startApp([handlerFor(options, hold)], TEST_OPTIONS);
    suite.apps.push(other);
    const engines = [app.get(RetryEngine), other.get(RetryEngine)];
    const view = (): PartitionsStatus => engines[0].partitions()[0];
    await waitFor(
      () =>
        engines.every((e) => e.partitions()[0]?.partitions.some((p) => p.consuming)) &&
        view().partitions.every((p) => p.owner !== undefined && p.consumers === 1),
      'both instances own partitions, one consumer on each',
      15_000,
    );

    for (let k = 0; k < 12; k++) {
      broker.channel.publish(queue, 'any', Buffer.from(JSON.stringify({ k })), { headers: { 'x-key': `k${k}` }, contentType: 'application/json' });
    }
    await (broker.channel as unknown as { waitForConfirms(): Promise<void> }).waitForConfirms();
    // One message in flight per partition that got any (prefetch 1, held), the rest ready; the engine's depths agree with the broker's.
    const settled = async () => {
      const parts = view().partitions;
      const ready = await Promise.all(parts.map((p) => broker.count(p.queue)));
      const depths = parts.map((p) => p.depth);
      return started + ready.reduce((a: number, b) => a + (b ?? 0), 0) === 12 && depths.every((d, i) => d === ready[i]) && depths;
    };
    const depths = await waitFor(settled, 'the engine reads every partition depth', 15_000);
    expect(depths.reduce((a: number, b) => a + (b ?? 0), 0)).toBeGreaterThanOrEqual(9);

    const problems: string[] = [];
    const page = await browser!.context.newPage();
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
    });
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text()); // a CSP violation included
    });
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(`${served.url}/retry`);
    await page.locator('#status', { hasText: /^Updated/ }).waitFor();
    await page.locator('#partitions-section').waitFor({ state: 'visible' });

    const status = view();
    const member = status.member;
    expect(await page.locator(`#partitions [data-handler-queue="${queue}"] h3`).textContent()).toBe(queue);
    expect(await page.locator(`#partitions [data-handler-queue="${queue}"] .hint`).textContent()).toBe(
      `3 partitions over 2 instances; this one is ${member.slice(0, 8)}.`,
    );
    const rows = page.locator(`#partitions [data-handler-queue="${queue}"] tbody tr`);
    expect(await rows.count()).toBe(3);
    const shown = [];
    for (let i = 0; i < 3; i++) {
      const row = rows.nth(i);
      shown.push({ cells: await texts(page, `#partitions tbody tr:nth-child(${i + 1}) > *`), owner: await row.getAttribute('data-owner') });
    }
    const expected = status.partitions.map((p) => ({
      cells: [p.queue, p.mine ? 'this instance' : `instance ${(p.owner ?? '').slice(0, 8)}`, String(p.depth), '1'],
      owner: p.owner,
    }));
    expect(shown).toEqual(expected);
    expect(shown.map((s) => s.cells[0])).toEqual([0, 1, 2].map((i) => `${queue}.p${i}`));
    // Both instances own some: the page names the other one by its member id.
    const otherMember = other.get(RetryEngine).partitions()[0].member;
    expect(new Set(status.partitions.map((p) => p.owner))).toEqual(new Set([member, otherMember]));
    expect(shown.some((s) => s.cells[1] === 'this instance')).toBe(true);
    expect(shown.some((s) => s.cells[1] === `instance ${otherMember.slice(0, 8)}`)).toBe(true);

    // Released, the partitions drain and the page follows by itself (auto-refresh).
    release();
    await waitFor(async () => (await Promise.all(status.partitions.map((p) => broker.count(p.queue)))).every((n) => n === 0), 'drained', 20_000);
    await waitFor(
      async () => (await texts(page, '#partitions tbody td[data-depth]')).join(',') === '0,0,0',
      'the page shows the drained depths',
      20_000,
    );
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);
});
