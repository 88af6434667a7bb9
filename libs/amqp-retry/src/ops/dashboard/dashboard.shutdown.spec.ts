import type { ExecutionContext } from '@nestjs/common';
import { type ModuleRef, Reflector } from '@nestjs/core';
import { DashboardAccessGuard } from './dashboard-access.guard.js';
import { resolveDashboardConfig } from './dashboard.options.js';
import { DashboardShutdown } from './dashboard.shutdown.js';
import { PageTokens } from './page.token.js';

/** The guard in front of one page request from a loopback host, with the response's headers kept. */
async function answer(shutdown: DashboardShutdown): Promise<Record<string, string>> {
  const guard = new DashboardAccessGuard(
    resolveDashboardConfig({ allowUnauthenticated: true }),
    new PageTokens(PageTokens.randomKey(), 60_000),
    new Reflector(),
    {} as ModuleRef,
    shutdown,
  );
  const headers: Record<string, string> = {};
  const response = { headersSent: false, setHeader: (name: string, value: string) => void (headers[name] = value) };
  const request = { method: 'GET', headers: { host: '127.0.0.1:3000' } };
  const context = {
    switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }),
    getHandler: () => answer, // no route kind: the guard's strictest
  } as unknown as ExecutionContext;
  await guard.canActivate(context).catch(() => false); // a refused write still carries its headers
  return headers;
}

describe('DashboardShutdown', () => {
  it("keeps the page's connections alive until the application shuts down, then closes each after its answer", async () => {
    const shutdown = new DashboardShutdown();
    expect((await answer(shutdown)).connection).toBeUndefined();
    shutdown.beforeApplicationShutdown();
    const closing = await answer(shutdown);
    expect(closing.connection).toBe('close');
    expect(closing['x-frame-options']).toBe('DENY'); // the security headers as before
  });
});
