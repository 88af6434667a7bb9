import { type CanActivate, type ExecutionContext, ForbiddenException, Inject, Injectable, Logger, type Type } from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isObservable, lastValueFrom } from 'rxjs';
import { checkApiRead, checkOpenPageHost, checkStateChange, headerValue, TOKEN_HEADER } from './cross-site.check.js';
import type { DashboardConfig } from './dashboard.options.js';
import { DASHBOARD_CONFIG, DASHBOARD_ROUTE_KIND, type DashboardRouteKind } from './dashboard.constants.js';
import { PageTokens } from './page.token.js';
import { SECURITY_HEADERS } from './security.headers.js';
import { DashboardShutdown } from './dashboard.shutdown.js';
import { maskingLogger } from '../../core/text/credentials.mask.js';
import type { RetryLogger } from '../../core/observe/retry.logger.js';

/**
 * Runs before every route of the dashboard, in this order: security headers on the response (so refusals carry them
 * too); closed unless a guard or allowUnauthenticated was given; an open page answers loopback hosts only (DNS
 * rebinding); cross-site checks on the API and the page token on state-changing calls; then the user's guard, last so
 * that a forged cross-site call is refused before it sees it.
 */
@Injectable()
export class DashboardAccessGuard implements CanActivate {
  /** Masked and printable: a refusal quotes what the request sent. */
  private readonly logger: RetryLogger = maskingLogger(new Logger('RetryDashboard'));
  private userGuard?: Promise<CanActivate>;

  constructor(
    @Inject(DASHBOARD_CONFIG) private readonly config: DashboardConfig,
    private readonly tokens: PageTokens,
    private readonly reflector: Reflector,
    private readonly moduleRef: ModuleRef,
    private readonly shutdown: DashboardShutdown,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<IncomingMessage>();
    setSecurityHeaders(http.getResponse<ServerResponse | { raw?: ServerResponse }>(), this.shutdown.isClosing);
    const kind = this.reflector.get<DashboardRouteKind | undefined>(DASHBOARD_ROUTE_KIND, context.getHandler()) ?? 'write';

    if (!this.config.guard && !this.config.open) {
      throw new ForbiddenException(
        'The parked-messages page is closed: RetryDashboardModule was given no guard. Pass guard (who may use it), or allowUnauthenticated: true for local use only.',
      );
    }
    if (this.config.open) this.refuseUnless(checkOpenPageHost(request.headers, this.config.allowedHosts));
    if (kind === 'read') this.refuseUnless(checkApiRead(request.headers));
    if (kind === 'write') {
      this.refuseUnless(checkStateChange(request.method ?? 'GET', request.headers, this.config.trustedOrigins));
      const problem = this.tokens.verify(headerValue(request.headers, TOKEN_HEADER));
      if (problem) throw new ForbiddenException(`Refused: ${problem}.`);
    }
    if (!this.config.guard) return true;
    const guard = await this.resolveUserGuard(this.config.guard);
    const verdict = guard.canActivate(context); // boolean, Promise or Observable, as Nest's own guards may answer
    return isObservable(verdict) ? lastValueFrom(verdict, { defaultValue: false }) : verdict;
  }

  private refuseUnless(verdict: { ok: true } | { ok: false; reason: string }): void {
    if (!verdict.ok) {
      this.logger.warn(`Refused a cross-site or malformed call: ${verdict.reason}`);
      throw new ForbiddenException(`Refused: ${verdict.reason}.`);
    }
  }

  /**
   * A guard instance as given, or the class: a provider of this module with forRoot, created once in this module's
   * injector with forRootAsync (whose options come too late to list it). A failed creation is not kept: the next
   * request tries again, and the error says what to do.
   */
  private resolveUserGuard(guard: Type<CanActivate> | CanActivate): Promise<CanActivate> {
    if (typeof guard !== 'function') return Promise.resolve(guard);
    this.userGuard ??= (async () => {
      try {
        return this.moduleRef.get(guard, { strict: false });
      } catch {
        return this.moduleRef.create(guard);
      }
    })().catch((error: unknown) => {
      this.userGuard = undefined;
      this.logger.error(
        `Could not create the guard ${guard.name}: ${error instanceof Error ? error.message : String(error)}. List the modules it injects from in imports.`,
      );
      throw error;
    });
    return this.userGuard;
  }
}

/**
 * Express passes Node's response; Fastify its reply, whose `raw` is Node's. While the application shuts down, the
 * connection is closed after the answer (see DashboardShutdown), so that a page left open cannot hold app.close().
 */
function setSecurityHeaders(response: ServerResponse | { raw?: ServerResponse }, closing: boolean): void {
  const target = 'setHeader' in response && typeof response.setHeader === 'function' ? response : (response as { raw?: ServerResponse }).raw;
  if (!target || target.headersSent) return;
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) target.setHeader(name, value);
  if (closing) target.setHeader('connection', 'close');
}
