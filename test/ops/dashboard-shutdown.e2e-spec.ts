import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { get as getTls } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type Socket } from 'node:net';
import { Controller, Get, type INestApplication, Res } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { ServerResponse } from 'node:http';
import { RetryDashboardModule, RetryModule } from 'nestjs-amqp-retry';
import { launchBrowser } from '../support/browser.js';
import { waitFor } from '../support/broker.js';
import { SUITE_OPTIONS, useSuite } from '../support/suite.js';

/** A route of the application's own, answering in two parts 1.5 s apart: a request in flight during app.close(). */
@Controller('slow')
class SlowController {
  @Get()
  answer(@Res() response: ServerResponse): void {
    response.write('part1;');
    setTimeout(() => response.end('part2'), 1_500);
  }
}

async function startApp(httpsOptions?: { key: Buffer; cert: Buffer }): Promise<{ app: INestApplication; url: string }> {
  const moduleRef = await Test.createTestingModule({
    imports: [RetryModule.forRoot(SUITE_OPTIONS), RetryDashboardModule.forRoot({ allowUnauthenticated: true })],
    controllers: [SlowController],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false, httpsOptions });
  await app.listen(0, '127.0.0.1');
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1').replace(/\/$/, '') };
}

/** A self-signed certificate for 127.0.0.1, made by openssl for this run. */
function selfSigned(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'dashboard-tls-'));
  try {
    const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'], {
      stdio: 'ignore',
    });
    return { key: readFileSync(key), cert: readFileSync(cert) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The slow route's answer as it arrives; `body()` is what came so far. */
function askSlow(url: string): { answered: Promise<string>; body: () => string } {
  let body = '';
  const ask = url.startsWith('https:') ? getTls : get;
  const answered = new Promise<string>((resolve, reject) => {
    ask(`${url}/slow`, { rejectUnauthorized: false }, (response) => {
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve(body));
      response.on('error', reject);
    }).on('error', reject);
  });
  return { answered, body: () => body };
}

/** A connection a browser opens ahead of need (Chromium preconnects) and sends nothing on. */
async function unusedConnection(url: string): Promise<{ socket: Socket; closed: Promise<void> }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, closed };
}

/** How long app.close() took, or Infinity if it had not returned after 10 s (the suite then closes it). */
async function timedClose(app: INestApplication): Promise<number> {
  const started = Date.now();
  const closed = await Promise.race([app.close().then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 10_000))]);
  return closed ? Date.now() - started : Infinity;
}

/**
 * app.close() with the page open in a browser: Node's server.close() waits without end for a connection that never
 * sent a request, and a keep-alive one that keeps asking never falls idle. Both must let the application stop within
 * its own bounds (SUITE_OPTIONS: a 2 s shutdownTimeout), and no answer in flight may be cut.
 */
describe('the page does not hold app.close()', () => {
  const suite = useSuite<INestApplication>('e2e.page-shutdown');
  /** A socket of the test's, destroyed after it before the app closes (when the test's own close did not return). */
  const own = (socket: Socket) => suite.clients.push({ close: () => socket.destroy() });

  it('closes a connection that never sent a byte, and lets a request in flight on another route finish its answer', async () => {
    const started = await startApp();
    const app = (suite.app = started.app);
    const unused = await unusedConnection(started.url);
    own(unused.socket);
    const { answered, body } = askSlow(started.url);
    await waitFor(() => body().startsWith('part1;'), 'the first part of the slow answer', 5_000);
    const took = await timedClose(app);
    if (took !== Infinity) suite.app = undefined;
    expect(await answered).toBe('part1;part2'); // not cut: the whole answer
    expect(took).toBeGreaterThan(1_000); // it waited for that answer...
    expect(took).toBeLessThan(5_000); // ...and not for the unused connection (without end before)
    await waitFor(() => unused.closed.then(() => true), 'the unused connection closed', 2_000);
  });

  it('stops within its bounds while Chromium has the page open and refreshing', async () => {
    const started = await startApp();
    const app = (suite.app = started.app);
    const browser = await launchBrowser();
    suite.afterThis(() => browser.close());
    const page = await browser.context.newPage();
    await page.goto(`${started.url}/retry`);
    await page.waitForLoadState('networkidle');
    // The browser's own preconnect is a guess of Chromium's: one of ours makes sure there is one.
    own((await unusedConnection(started.url)).socket);
    const took = await timedClose(app);
    if (took !== Infinity) suite.app = undefined;
    expect(took).toBeLessThan(5_000);
  });

  it('over HTTPS, lets a request in flight finish its whole answer (only idle connections are closed there)', async () => {
    const started = await startApp(selfSigned());
    const app = (suite.app = started.app);
    expect(started.url).toMatch(/^https:/);
    const { answered, body } = askSlow(started.url);
    await waitFor(() => body().startsWith('part1;'), 'the first part of the slow answer', 5_000);
    const took = await timedClose(app);
    if (took !== Infinity) suite.app = undefined;
    expect(await answered).toBe('part1;part2');
    expect(took).toBeLessThan(5_000);
  });
});
