import type { INestApplication } from '@nestjs/common';
import { NonRetryableError } from 'nestjs-amqp-retry';
import { handlerFor } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { startDashboardApp } from '../support/dashboard-app.js';
import { useSuite } from '../support/suite.js';

const TOKEN_HEADER = 'x-retry-dashboard-token';
const tokenOf = (html: string) => /name="retry-dashboard-token" content="([^"]+)"/.exec(html)?.[1] ?? '';

/** The page's API as an operator's script calls it: what a body asks is done, or refused before anything changes. */
describe('parked-messages page: replay and purge bodies', () => {
  const suite = useSuite<INestApplication>('e2e.dash-op');

  /** A handler that parks everything at once, `n` parked messages, and a POST to the page's API with its token. */
  async function startWithParked(n: number) {
    const exchange = uniqueName('e2e.dash-op.x');
    suite.extraExchanges.push(exchange);
    const Handler = handlerFor({ queue: suite.queue, exchange, routingKey: 'k', delays: [100] }, () => {
      throw new NonRetryableError('card expired');
    });
    const { app, url } = await startDashboardApp([Handler], { path: '/retry', allowUnauthenticated: true });
    suite.app = app;
    const park = async (count: number, total: number) => {
      for (let i = 0; i < count; i++) await suite.broker.publish(exchange, 'k', { i });
      await waitFor(async () => (await suite.broker.count(`${suite.queue}.error`)) === total, `${total} parked`);
    };
    await park(n, n);
    const token = tokenOf(await (await fetch(`${url}/retry`)).text());
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${url}/retry/api/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [TOKEN_HEADER]: token },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    return { post, park, url, exchange, errorQueue: `${suite.queue}.error` };
  }

  it('lists each body cut to 16 KiB with its size, and gives it whole in its own route and the export', async () => {
    const { url, exchange, errorQueue } = await startWithParked(1);
    const big = { i: 'big', pad: `${'é'.repeat(100_000)}tail-${uniqueName('t')}` };
    await suite.broker.publish(exchange, 'k', big);
    await waitFor(async () => (await suite.broker.count(errorQueue)) === 2, '2 parked');
    const whole = JSON.stringify(big);
    const size = Buffer.byteLength(whole);

    const list = await fetch(`${url}/retry/api/messages?queue=${suite.queue}&limit=200`);
    const { total, items } = (await list.json()) as { total: number; items: Array<Record<string, unknown> & { body: string; id: string }> };
    expect(total).toBe(2);
    const [small, cut] = items;
    expect([small.bodyTruncated, small.bodyBytes, small.body]).toEqual([false, Buffer.byteLength(small.body), '{"i":0}']);
    expect([cut.bodyTruncated, cut.bodyBytes]).toEqual([true, size]);
    expect(Buffer.byteLength(cut.body)).toBeLessThanOrEqual(16 * 1024);
    expect(whole.startsWith(cut.body)).toBe(true);
    // The text filter reads the whole body: the tail past the cut still finds it.
    const byTail = (await (await fetch(`${url}/retry/api/messages?queue=${suite.queue}&text=${big.pad.slice(-20)}`)).json()) as { total: number };
    expect(byTail.total).toBe(1);

    const shown = (await (await fetch(`${url}/retry/api/messages/${errorQueue}/${cut.id}`)).json()) as Record<string, unknown>;
    expect(shown.body).toBe(whole);
    expect(shown.bodyTruncated).toBeUndefined();
    const exported = (await (await fetch(`${url}/retry/api/export?errorQueue=${errorQueue}`)).text()).trim().split('\n');
    expect((JSON.parse(exported[1]) as { body: string }).body).toBe(whole);
  });

  it('answers a dryRun with what would be done and changes nothing; refuses unknown fields, naming them', async () => {
    const { post, errorQueue } = await startWithParked(2);
    expect(await post('purge', { errorQueue, filter: {}, dryRun: true })).toEqual({ status: 200, body: { matched: 2, purged: 0, dryRun: true } });
    expect(await post('replay', { errorQueue, filter: {}, dryRun: true })).toEqual({
      status: 200,
      body: { matched: 2, replayed: 0, failed: [], dryRun: true },
    });
    const misspelt = await post('purge', { errorQueue, filter: {}, dryrun: true });
    expect([misspelt.status, misspelt.body.message]).toEqual([
      400,
      'body has unknown field(s) "dryrun"; known: errorQueue, ids, filter, expected, dryRun',
    ]);
    const narrow = await post('purge', { errorQueue, filter: { reson: 'malformed' } });
    expect([narrow.status, narrow.body.message]).toEqual([400, expect.stringMatching(/^filter has unknown field\(s\) "reson"/)]);
    expect((await post('purge', { errorQueue, filter: {}, dryRun: 'yes' })).status).toBe(400);
    expect(await suite.broker.count(errorQueue)).toBe(2);
    expect(await suite.broker.count(suite.queue)).toBe(0);
  });

  it('refuses with 409 a replay or purge whose confirmed count no longer matches, changing nothing', async () => {
    const { post, park, errorQueue, url } = await startWithParked(2);
    const summary = (await (await fetch(`${url}/retry/api/summary?errorQueue=${encodeURIComponent(errorQueue)}`)).json()) as {
      groups: { key: string; count: number }[];
    };
    const [group] = summary.groups;
    expect(group.count).toBe(2);
    await park(1, 3); // parked after the operator read "2"
    const groupPurge = await post('groups/purge', { errorQueue, group: group.key, expected: 2, by: 'ops' });
    expect([groupPurge.status, groupPurge.body.message]).toEqual([409, expect.stringMatching(/match now, not the 2 confirmed/)]);
    const purge = await post('purge', { errorQueue, filter: {}, expected: 2 });
    expect([purge.status, purge.body.message]).toEqual([409, expect.stringMatching(/^3 parked message\(s\) of ".*" match now, not the 2 confirmed/)]);
    expect((await post('replay', { errorQueue, filter: {}, expected: 2 })).status).toBe(409);
    expect(await suite.broker.count(errorQueue)).toBe(3);
    expect(await post('purge', { errorQueue, filter: {}, expected: 3 })).toEqual({ status: 200, body: { matched: 3, purged: 3, dryRun: false } });
  });
});
