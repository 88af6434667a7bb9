import { type CanActivate, type ExecutionContext, Injectable, type INestApplication, UnauthorizedException } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { NonRetryableError, type RetryDashboardOptions } from 'nestjs-amqp-retry';
import type { Page } from 'playwright-core';
import { handlerFor } from '../support/app.js';
import { launchBrowser } from '../support/browser.js';
import { waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { startDashboardApp } from '../support/dashboard-app.js';

// ---- The guard recipe of docs/operations.md ("Guarding the page"), as written there. ----
const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** HTTP Basic auth for the parked-messages page: the browser asks once, then sends the credentials with every request. */
@Injectable()
export class OpsBasicAuthGuard implements CanActivate {
  private readonly expected: Buffer;

  constructor() {
    const { OPS_USER: user, OPS_PASSWORD: password } = process.env;
    if (!user || !password) throw new Error('Set OPS_USER and OPS_PASSWORD for the parked-messages page');
    this.expected = digest(`${user}:${password}`);
  }

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const [scheme, encoded] = (http.getRequest<IncomingMessage>().headers.authorization ?? '').split(' ');
    const given = scheme === 'Basic' && encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '';
    if (given && timingSafeEqual(digest(given), this.expected)) return true;
    http.getResponse<ServerResponse>().setHeader('WWW-Authenticate', 'Basic realm="parked messages", charset="UTF-8"');
    throw new UnauthorizedException();
  }
}
// ---- end of the recipe ----

/** What a browser says a request is for: the navigation to the page ('document'), its script, its stylesheet, a fetch ('empty'). */
const destinationOf = (context: ExecutionContext) =>
  context.switchToHttp().getRequest<IncomingMessage>().headers['sec-fetch-dest'] as string | undefined;

/** Admits the navigation to the page only, refusing everything the page then asks for itself (403). */
const documentOnly: CanActivate = { canActivate: (context) => destinationOf(context) === 'document' };

/** Admits the page and its assets, and answers the page's API calls 401, as a guard reading a header the browser never sends does. */
const apiRefused: CanActivate = {
  canActivate: (context) => {
    if (destinationOf(context) !== 'empty') return true;
    throw new UnauthorizedException('a bearer token is required');
  },
};

describe('the parked-messages page behind a guard, in headless Chromium', () => {
  const suite = useSuite<INestApplication>('e2e.guard');
  const env = { OPS_USER: process.env.OPS_USER, OPS_PASSWORD: process.env.OPS_PASSWORD };

  beforeEach(() =>
    suite.afterThis(() => {
      process.env.OPS_USER = env.OPS_USER;
      process.env.OPS_PASSWORD = env.OPS_PASSWORD;
      if (env.OPS_USER === undefined) delete process.env.OPS_USER;
      if (env.OPS_PASSWORD === undefined) delete process.env.OPS_PASSWORD;
    }),
  );

  /** The application with one parked message, its page behind `guard`. */
  async function start(guard: RetryDashboardOptions['guard']): Promise<string> {
    const Handler = handlerFor({ queue: suite.queue, delays: [100] }, () => {
      throw new NonRetryableError('card expired');
    });
    const started = await startDashboardApp([Handler], { path: '/retry', guard });
    suite.app = started.app;
    await suite.broker.publish('', suite.queue, { id: 1 });
    await waitFor(async () => (await suite.broker.count(`${suite.queue}.error`)) === 1, 'one parked message');
    return started.url;
  }

  /** The computed background colour of an element (the tests compile without the DOM's types, the browser runs it). */
  const background = (page: Page, selector: string) =>
    page
      .locator(selector)
      .evaluate(
        (node) => (globalThis as unknown as { getComputedStyle(n: unknown): { backgroundColor: string } }).getComputedStyle(node).backgroundColor,
      );

  it('says, styled, what to do when a guard refuses the page its own script and stylesheet', async () => {
    const url = await start(documentOnly);
    const browser = await launchBrowser();
    try {
      const page = await browser.context.newPage();
      const served = await page.goto(`${url}/retry`);
      expect(served?.status()).toBe(200);
      const help = page.locator('#boot .later');
      await help.waitFor({ state: 'visible', timeout: 10_000 });
      expect(await help.textContent()).toMatch(/If this stays.*\/retry\/assets\/.*must accept each of them.*HTTP Basic/s);
      expect(await background(page, '#boot')).toBe('rgb(251, 236, 235)'); // the inline style, admitted by its hash
    } finally {
      await browser.close();
    }
  });

  it('says when its API answers 401, and 403, instead of a dead page', async () => {
    const url = await start(apiRefused);
    const browser = await launchBrowser();
    try {
      const page = await browser.context.newPage();
      await page.goto(`${url}/retry`);
      const banner = page.locator('#refused');
      await banner.waitFor({ state: 'visible' });
      expect(await page.locator('#refused-title').textContent()).toContain('Not signed in (401 Unauthorized)');
      expect(await page.locator('#refused-server').textContent()).toContain('a bearer token is required');
      expect(await banner.textContent()).toContain('/retry/api/');
      expect(await page.locator('#status').textContent()).toMatch(/401/);
      expect(await background(page, '#refused')).toBe('rgb(251, 236, 235)'); // styled by the page's stylesheet
      expect(await page.locator('#boot').isHidden()).toBe(true);
    } finally {
      await browser.close();
    }

    await suite.app!.close();
    const forbidding = await startDashboardApp([], { path: '/retry', guard: { canActivate: (c) => destinationOf(c) !== 'empty' } });
    suite.app = forbidding.app;
    const again = await launchBrowser();
    try {
      const page = await again.context.newPage();
      await page.goto(`${forbidding.url}/retry`);
      await page.locator('#refused').waitFor({ state: 'visible' });
      expect(await page.locator('#refused-title').textContent()).toContain('Not allowed (403 Forbidden)');
    } finally {
      await again.close();
    }
  });

  it('works end to end behind the docs’ HTTP Basic guard, and refuses without the credentials', async () => {
    process.env.OPS_USER = 'ops';
    process.env.OPS_PASSWORD = 'pä55:w/ord@%';
    const url = await start(OpsBasicAuthGuard);

    const anonymous = await fetch(`${url}/retry`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Basic realm="parked messages", charset="UTF-8"');
    const wrong = await fetch(`${url}/retry/api/queues`, { headers: { authorization: `Basic ${Buffer.from('ops:guess').toString('base64')}` } });
    expect(wrong.status).toBe(401);

    const browser = await launchBrowser({ httpCredentials: { username: 'ops', password: 'pä55:w/ord@%' } });
    try {
      const page = await browser.context.newPage();
      await page.goto(`${url}/retry`);
      await page.locator('#status', { hasText: /Updated|Could not|Not/ }).waitFor();
      expect(await page.locator('#status').textContent()).toMatch(/^Updated/);
      expect(await page.locator(`tr[data-queue="${suite.queue}"]`).count()).toBe(1);
      expect(await page.locator('#messages li.message').count()).toBe(1);
      expect(await page.locator('#refused').isHidden()).toBe(true);
      // A state change from the page goes through too: the browser sends the credentials with the page's own POST.
      await page.locator('#purge-filtered').click();
      await page.locator('#confirm-ok').click();
      await page.locator('#status', { hasText: /^Purged/ }).waitFor();
      await waitFor(async () => (await suite.broker.count(`${suite.queue}.error`)) === 0, 'the parked message purged');
    } finally {
      await browser.close();
    }
  });
});
