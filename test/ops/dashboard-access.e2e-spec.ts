import { type CanActivate, type ExecutionContext, Injectable, type INestApplication, Module } from '@nestjs/common';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { of } from 'rxjs';
import { NonRetryableError, ParkedMessages, RetryDashboardModule } from 'nestjs-amqp-retry';
import { handlerFor } from '../support/app.js';
import { launchBrowser } from '../support/browser.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { BearerGuard, startDashboardApp } from '../support/dashboard-app.js';

/** A service the guard injects, from a module of the user's. */
@Injectable()
class OperatorKeys {
  readonly admitted = 'Bearer ops-secret';
}

@Module({ providers: [OperatorKeys], exports: [OperatorKeys] })
class OperatorKeysModule {}

@Injectable()
class KeyGuard implements CanActivate {
  constructor(private readonly keys: OperatorKeys) {}

  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers.authorization === this.keys.admitted;
  }
}

const TOKEN_HEADER = 'x-retry-dashboard-token';
const tokenOf = (html: string) => /name="retry-dashboard-token" content="([^"]+)"/.exec(html)?.[1] ?? '';

describe('parked-messages page: closed unless opened, and refuses cross-site calls', () => {
  const suite = useSuite<INestApplication>('e2e.dash');
  let exchange: string;

  beforeEach(() => {
    exchange = uniqueName('e2e.dash.x');
    suite.extraExchanges.push(exchange);
  });

  /** A handler that parks everything at once, and one parked message in its parking queue. */
  async function startWithOneParked(dashboard: Parameters<typeof startDashboardApp>[1]) {
    const Handler = handlerFor({ queue: suite.queue, exchange, routingKey: 'k', delays: [100] }, () => {
      throw new NonRetryableError('card expired');
    });
    const started = await startDashboardApp([Handler], dashboard);
    suite.app = started.app;
    await suite.broker.publish(exchange, 'k', { id: 1 });
    await waitFor(async () => (await suite.broker.count(`${suite.queue}.error`)) === 1, 'one parked message');
    return started;
  }

  it('refuses the page, its script and its API with 403 when given no guard and not opened', async () => {
    const { url } = await startWithOneParked({ path: '/ops/retry' });
    for (const path of ['/ops/retry', '/ops/retry/assets/app.js', '/ops/retry/api/queues', '/ops/retry/api/messages']) {
      const response = await fetch(url + path);
      expect([path, response.status]).toEqual([path, 403]);
      expect(await response.text()).toContain('RetryDashboardModule was given no guard');
      expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    }
    const post = await fetch(`${url}/ops/retry/api/purge`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [TOKEN_HEADER]: 'x' },
      body: JSON.stringify({ errorQueue: `${suite.queue}.error`, filter: {} }),
    });
    expect(post.status).toBe(403);
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(1);
  });

  it("runs the user's guard before every route: 401 without the bearer token, the page with it", async () => {
    const { url } = await startWithOneParked({ path: '/retry', guard: BearerGuard });
    for (const path of ['/retry', '/retry/assets/app.js', '/retry/api/queues']) {
      expect([path, (await fetch(url + path)).status]).toEqual([path, 401]);
    }
    const page = await fetch(`${url}/retry`, { headers: { authorization: 'Bearer ops-secret' } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<title>Retry console</title>');
    expect(html).not.toContain('This page is open');
    expect(
      Object.fromEntries(
        ['content-type', 'x-content-type-options', 'x-frame-options', 'referrer-policy', 'cache-control'].map((h) => [h, page.headers.get(h)]),
      ),
    ).toEqual({
      'content-type': 'text/html; charset=utf-8',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
    });
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self';.*frame-ancestors 'none'/);
    const script = await fetch(`${url}/retry/assets/app.js`, { headers: { authorization: 'Bearer ops-secret' } });
    expect([script.status, script.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8']);
    // A guard instance works as well as a class.
    await suite.app!.close();
    const refusing = await startDashboardApp([], { path: '/retry', guard: { canActivate: () => false } });
    suite.app = refusing.app;
    expect((await fetch(`${refusing.url}/retry`)).status).toBe(403);
    await suite.app.close();
    const observing = await startDashboardApp([], { path: '/retry', guard: { canActivate: () => of(true) } }); // an Observable answer
    suite.app = observing.app;
    expect((await fetch(`${observing.url}/retry`)).status).toBe(200);
  });

  it('resolves a guard class with the services it injects from imports, and fails the start when they are missing', async () => {
    const started = await startDashboardApp([], { path: '/retry', guard: KeyGuard, imports: [OperatorKeysModule] });
    suite.app = started.app;
    expect((await fetch(`${started.url}/retry/api/queues`)).status).toBe(403);
    expect((await fetch(`${started.url}/retry/api/queues`, { headers: { authorization: 'Bearer ops-secret' } })).status).toBe(200);
    await expect(startDashboardApp([], { path: '/retry', guard: KeyGuard })).rejects.toThrow(/KeyGuard/);
  });

  it('takes its options from a factory with forRootAsync', async () => {
    const module = RetryDashboardModule.forRootAsync({ path: '/async/retry', useFactory: async () => ({ guard: BearerGuard }) });
    const { app: started, url } = await startDashboardApp([], module);
    suite.app = started;
    expect((await fetch(`${url}/async/retry`)).status).toBe(401);
    expect((await fetch(`${url}/async/retry`, { headers: { authorization: 'Bearer ops-secret' } })).status).toBe(200);
    expect(() => RetryDashboardModule.forRootAsync({ path: '/retry/:id', useFactory: () => ({}) })).toThrow(/dashboard\.path/);
  });

  it('says plainly when the page is open, and still refuses state changes without the page token, from another origin, or on a queue that is not a parking queue', async () => {
    const { url } = await startWithOneParked({ path: '/retry', allowUnauthenticated: true });
    const html = await (await fetch(`${url}/retry`)).text();
    expect(html).toContain('This page is open.');
    const token = tokenOf(html);
    expect(token).not.toBe('');
    const body = JSON.stringify({ errorQueue: `${suite.queue}.error`, filter: {} });
    const json = { 'content-type': 'application/json' };
    const attempts: Array<[string, RequestInit]> = [
      ['no token', { headers: json }],
      ['a forged token', { headers: { ...json, [TOKEN_HEADER]: `${Date.now().toString(36)}.AAAA.BBBB` } }],
      ['a form body', { headers: { 'content-type': 'application/x-www-form-urlencoded', [TOKEN_HEADER]: token } }],
      ['another origin', { headers: { ...json, [TOKEN_HEADER]: token, origin: 'http://evil.example' } }],
      ['a cross-site fetch', { headers: { ...json, [TOKEN_HEADER]: token, 'sec-fetch-site': 'cross-site' } }],
    ];
    for (const [what, init] of attempts) {
      const response = await fetch(`${url}/retry/api/purge`, { method: 'POST', body, ...init });
      expect([what, response.status]).toEqual([what, 403]);
    }
    expect((await fetch(`${url}/retry/api/purge?errorQueue=${suite.queue}.error`)).status).toBe(404); // no GET that changes state
    const crossSiteRead = await fetch(`${url}/retry/api/queues`, { headers: { 'sec-fetch-site': 'cross-site' } });
    expect(crossSiteRead.status).toBe(403);
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(1);

    // With the token, only parking queues of known handler queues may be named: not the business queue itself.
    await suite.app!.close();
    await suite.broker.channel.sendToQueue(suite.queue, Buffer.from('{"id":2}')); // a live message, its handler stopped
    // No handler: the live message stays. wholeVhost: this application runs no handler, so only a page that looks at
    // every application's recorded queues may reach the earlier one's parking queue.
    const reopened = await startDashboardApp([], { path: '/retry', allowUnauthenticated: true, wholeVhost: true });
    suite.app = reopened.app;
    const url2 = reopened.url;
    const fresh = tokenOf(await (await fetch(`${url2}/retry`)).text());
    const purgeBusiness = await fetch(`${url2}/retry/api/purge`, {
      method: 'POST',
      headers: { ...json, [TOKEN_HEADER]: fresh },
      body: JSON.stringify({ errorQueue: suite.queue, filter: {} }),
    });
    expect([purgeBusiness.status, ((await purgeBusiness.json()) as { message: string }).message]).toEqual([
      400,
      `errorQueue "${suite.queue}" is not the parking queue of a known handler queue`,
    ]);
    expect((await fetch(`${url2}/retry/api/export?errorQueue=${suite.queue}`)).status).toBe(400);
    expect((await fetch(`${url2}/retry/api/messages/${suite.queue}/x`)).status).toBe(400);
    const purgeParked = await fetch(`${url2}/retry/api/purge`, {
      method: 'POST',
      headers: { ...json, [TOKEN_HEADER]: fresh },
      body: JSON.stringify({ errorQueue: `${suite.queue}.error`, filter: {} }),
    });
    expect([purgeParked.status, await purgeParked.json()]).toEqual([200, { matched: 1, purged: 1, dryRun: false }]);
    await waitFor(async () => (await suite.broker.count(`${suite.queue}.error`)) === 0, 'the parked message purged');
    expect(await suite.broker.count(suite.queue)).toBe(1);
  });

  it('an open page answers loopback host names only: a DNS-rebound name gets 403, a listed host the page', async () => {
    const { url } = await startWithOneParked({ path: '/retry', allowUnauthenticated: true, allowedHosts: ['orders.internal'] });
    const port = Number(new URL(url).port);
    const statusFor = (host: string, path = '/retry') =>
      new Promise<number>((resolve, reject) => {
        request({ host: '127.0.0.1', port, path, headers: { host } }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        })
          .on('error', reject)
          .end();
      });
    expect(await statusFor(`evil.example:${port}`)).toBe(403);
    expect(await statusFor(`evil.example:${port}`, '/retry/api/messages')).toBe(403);
    expect(await statusFor(`localhost:${port}`)).toBe(200);
    expect(await statusFor(`orders.internal:${port}`)).toBe(200);
  });

  it('shows a broker failure as 502 with the URL password masked, never the password itself', async () => {
    // Port 1 refuses connections: ParkedMessages fails with its URL in the message.
    const unreachable = new ParkedMessages({ url: 'amqp://ops:s3cret-pw@127.0.0.1:1/' });
    const started = await startDashboardApp([], { path: '/retry', allowUnauthenticated: true }, unreachable);
    suite.app = started.app;
    const html = await (await fetch(`${started.url}/retry`)).text();
    const answers = [
      await fetch(`${started.url}/retry/api/queues`),
      await fetch(`${started.url}/retry/api/messages`),
      await fetch(`${started.url}/retry/api/purge`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [TOKEN_HEADER]: tokenOf(html) },
        body: JSON.stringify({ errorQueue: 'x.error', filter: {} }),
      }),
    ];
    const texts = await Promise.all(answers.map((r) => r.text()));
    expect(answers.map((r) => r.status)).toEqual([502, 502, 502]);
    for (const text of [html, ...texts]) expect(text).not.toContain('s3cret-pw');
    expect(texts[0]).toContain('amqp://ops:***@127.0.0.1:1');
  });

  it('a cancelled export lets go of its parking queue: the next list answers, and nothing was taken away', async () => {
    const Handler = handlerFor({ queue: suite.queue, exchange, routingKey: 'k', delays: [100] }, () => {
      throw new NonRetryableError('card expired');
    });
    const started = await startDashboardApp([Handler], { path: '/retry', allowUnauthenticated: true });
    suite.app = started.app;
    const padding = 'x'.repeat(1024); // 1,500 lines of over 1 KiB: more than the socket buffers take unread
    await suite.broker.channel.assertExchange(exchange, 'topic', { durable: true });
    for (let id = 1; id <= 1500; id++)
      suite.broker.channel.publish(exchange, 'k', Buffer.from(JSON.stringify({ id, padding })), { contentType: 'application/json' });
    await (suite.broker.channel as unknown as { waitForConfirms(): Promise<void> }).waitForConfirms();
    await waitFor(async () => (await suite.broker.count(`${suite.queue}.error`)) === 1500, '1,500 parked messages', 60_000);

    const cancel = new AbortController();
    const download = await fetch(`${started.url}/retry/api/export?errorQueue=${suite.queue}.error`, { signal: cancel.signal });
    expect([download.status, download.headers.get('content-disposition')]).toEqual([200, `attachment; filename="${suite.queue}.error.jsonl"`]);
    cancel.abort(); // the operator cancels the download after its first bytes

    const startedAt = Date.now();
    const list = await fetch(`${started.url}/retry/api/messages?queue=${suite.queue}&limit=1`, { signal: AbortSignal.timeout(30_000) });
    expect([list.status, ((await list.json()) as { total: number }).total]).toEqual([200, 1500]);
    expect(Date.now() - startedAt).toBeLessThan(20_000);
    await waitFor(async () => (await suite.broker.count(`${suite.queue}.error`)) === 1500, 'every parked message back in its queue');
  }, 120_000);

  it('a page on another origin cannot purge through the browser: form posts and fetches are refused', async () => {
    const started = await startWithOneParked({ path: '/retry', allowUnauthenticated: true });
    const target = `${started.url}/retry/api/purge`;
    const payload = JSON.stringify({ errorQueue: `${suite.queue}.error`, filter: {} });
    // The attacker's page: a no-cors fetch, then a text/plain form whose body is JSON (the classic trick).
    const attacker: Server = createServer((_, response) => {
      response.setHeader('content-type', 'text/html');
      response.end(`<!doctype html><form id=f method=POST action="${target}" enctype="text/plain"><input name='${payload.slice(0, -2)}' value='"}'></form>
<script>fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: ${JSON.stringify(payload)} })
  .finally(() => document.getElementById('f').submit());</script>`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, 'localhost', resolve));
    const purges = () => started.served.filter((s) => s.path === '/retry/api/purge');
    let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;
    try {
      browser = await launchBrowser(); // inside the try: the attacker's server is closed when Chromium cannot start
      const page = await browser.context.newPage();
      await page.goto(`http://localhost:${(attacker.address() as AddressInfo).port}/`);
      await waitFor(() => purges().length >= 2, 'the two cross-site posts to reach the API');
    } finally {
      await browser?.close();
      await new Promise((resolve) => attacker.close(resolve));
    }
    expect(purges()).toEqual([
      { method: 'POST', path: '/retry/api/purge', status: 403 },
      { method: 'POST', path: '/retry/api/purge', status: 403 },
    ]);
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(1);
  });
});
