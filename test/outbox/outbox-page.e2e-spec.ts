import { OutboxPublisher } from 'nestjs-amqp-retry';
import { TEST_OPTIONS } from '../support/app.js';
import { launchBrowser } from '../support/browser.js';
import { BearerGuard, OPERATOR_AUTHORIZATION, startDashboardApp } from '../support/dashboard-app.js';
import { useOutboxSuite } from '../support/outbox.js';

describe('the outbox on the parked-messages page', () => {
  const suite = useOutboxSuite('e2e.outbox.page');

  it('shows the backlog: rows waiting, the oldest one, parked rows, and whether this instance relays', async () => {
    const { kind, table } = suite;
    // A writer without a relay: its rows wait.
    const started = await startDashboardApp([], { guard: BearerGuard }, undefined, undefined, {
      ...TEST_OPTIONS,
      outbox: { adapter: kind.adapter, table, relay: false },
    });
    suite.app = started.app;
    const outbox = started.app.get(OutboxPublisher);
    await kind.inTransaction(async (tx) => {
      for (let i = 0; i < 3; i++) await outbox.publish(tx, { exchange: '', routingKey: 'nowhere', body: { i } });
    });
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // the oldest is over a second old

    const refused = await fetch(`${started.url}/retry/api/outbox`);
    expect(refused.status).toBe(401); // the page's guard covers it
    const answer = await fetch(`${started.url}/retry/api/outbox`, { headers: { authorization: OPERATOR_AUTHORIZATION } });
    const backlog = (await answer.json()) as Record<string, unknown>;
    expect(backlog).toMatchObject({ configured: true, table, waiting: 3, parked: 0 });
    expect(backlog.oldestAgeMs).toBeGreaterThanOrEqual(1_000);
    expect(backlog.relay).toBeUndefined();

    const browser = await launchBrowser();
    try {
      await browser.context.setExtraHTTPHeaders({ authorization: OPERATOR_AUTHORIZATION });
      const page = await browser.context.newPage();
      await page.goto(`${started.url}/retry`);
      await page.locator('#outbox tbody tr').waitFor();
      const cells = await page.locator('#outbox tbody tr > *').evaluateAll((nodes) => nodes.map((n) => (n.textContent ?? '').trim()));
      expect(cells[0]).toBe(table);
      expect(cells[1]).toBe('3');
      expect(cells[2]).toMatch(/^\d+ s$/);
      expect(cells.slice(3)).toEqual(['0', 'none here']);
    } finally {
      await browser.close();
    }
  });
});
