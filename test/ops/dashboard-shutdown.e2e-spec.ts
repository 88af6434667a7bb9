import { connect, type Socket } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { launchBrowser } from '../support/browser.js';
import { waitFor } from '../support/broker.js';
import { startDashboardApp } from '../support/dashboard-app.js';
import { cleanUp } from '../support/suite.js';

/** A connection a browser opens ahead of need (Chromium preconnects) and sends nothing on. */
async function unusedConnection(url: string): Promise<{ socket: Socket; closed: Promise<void> }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, closed };
}

/** How long app.close() took, or Infinity if it had not returned after 10 s (the afterEach then closes it). */
async function timedClose(app: INestApplication): Promise<number> {
  const started = Date.now();
  const closed = await Promise.race([app.close().then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 10_000))]);
  return closed ? Date.now() - started : Infinity;
}

/**
 * app.close() with the page open in a browser: Node's server.close() waits for a connection that never sent a request
 * until its headersTimeout (60 s), and a keep-alive one that keeps asking never falls idle. Both must let the
 * application stop within its own bounds (SUITE_OPTIONS: a 2 s shutdownTimeout).
 */
describe('the page does not hold app.close()', () => {
  let app: INestApplication | undefined;
  let sockets: Socket[] = [];
  let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;

  afterEach(async () => {
    for (const socket of sockets) socket.destroy();
    sockets = [];
    await cleanUp(
      () => app?.close(),
      () => browser?.close(),
    );
    app = undefined;
    browser = undefined;
  });

  it('ends a connection that never sent a request, and a keep-alive one that did, once the server closes', async () => {
    const started = await startDashboardApp([], { allowUnauthenticated: true });
    app = started.app;
    const unused = await unusedConnection(started.url);
    sockets.push(unused.socket);
    // A keep-alive connection that asked once and stays open, as the page's own.
    const first = await fetch(`${started.url}/retry`);
    expect(first.status).toBe(200);
    const took = await timedClose(app);
    if (took !== Infinity) app = undefined;
    expect(took).toBeLessThan(5_000); // before: the 60 s headersTimeout, checked every 30 s
    await waitFor(() => unused.closed.then(() => true), 'the unused connection closed', 2_000);
  });

  it('stops within its bounds while Chromium has the page open and refreshing', async () => {
    const started = await startDashboardApp([], { allowUnauthenticated: true });
    app = started.app;
    browser = await launchBrowser();
    const page = await browser.context.newPage();
    await page.goto(`${started.url}/retry`);
    await page.waitForLoadState('networkidle');
    // The browser's own preconnect is a guess of Chromium's: one of ours makes sure there is one.
    sockets.push((await unusedConnection(started.url)).socket);
    const took = await timedClose(app);
    if (took !== Infinity) app = undefined;
    expect(took).toBeLessThan(5_000);
  });
});
