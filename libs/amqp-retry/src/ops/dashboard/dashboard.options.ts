import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import { RetryConfigError } from '../../errors/retry-config.error.js';
import { DEFAULT_HEARTBEAT_INTERVAL_MS, HEARTBEAT_INTERVAL_RANGE } from '../../core/observe/heartbeat/heartbeat.config.js';

/**
 * Options of `RetryDashboardModule.forRoot()`. The page and its JSON API are closed unless `guard` is given or
 * `allowUnauthenticated` is true.
 */
export interface RetryDashboardOptions {
  /** Where the page is served, under the application's global prefix, if any. Default `/retry`. */
  path?: string;
  /**
   * Decides who may see and act on the page: a guard class (resolved in this module, so list what it injects in
   * `imports`) or an instance. It runs before every request of the page, its script and its API.
   */
  guard?: Type<CanActivate> | CanActivate;
  /**
   * Serves the page to anyone who can reach it, with a banner saying so. For local development only: anyone who can
   * reach the port can then replay and purge parked messages. Ignored when `guard` is given.
   */
  allowUnauthenticated?: boolean;
  /** Modules the guard class needs (its injected services). */
  imports?: ModuleMetadata['imports'];
  /**
   * Show and act on the parked messages of every application on the vhost (every handler queue recorded there),
   * not only this application's. For an operators' console; default false: the page sees the handler queues this
   * application runs (its `@RetryWithBackoff` handlers, transport queues and delay ladder), and a call that names
   * another application's queue is refused (400).
   */
  wholeVhost?: boolean;
  /**
   * Key of the page tokens (at least 32 bytes). By default a random key per process, so a page served by one
   * instance is refused by another; give every instance behind a load balancer the same key.
   */
  tokenSecret?: string | Buffer;
  /** How long a page's token stays valid. Default 12 hours. */
  tokenTtlMs?: number;
  /**
   * Origins (`https://ops.example.com`) besides the request's own host allowed to send state-changing calls: for a
   * proxy that rewrites the Host header. Default none.
   */
  trustedOrigins?: string[];
  /**
   * With allowUnauthenticated: host names (or `name:port`) besides loopback ones (`localhost`, `127.0.0.1`, `[::1]`)
   * that the open page answers, e.g. a docker compose service name. Any other Host header gets 403, so that DNS
   * rebinding cannot turn a local page into a public one. Default none.
   */
  allowedHosts?: string[];
  /**
   * How often this instance sends its heartbeat (its identity, queues, states, counts and timings) to the application's
   * other instances on the control exchange, in milliseconds. An instance that misses 3 beats shows as gone. Default
   * 5000 (gone within 15 s of its last beat); at least 250.
   */
  heartbeatIntervalMs?: number;
}

/** The options once checked, with defaults; `open`: served without a guard (allowUnauthenticated). */
export type DashboardConfig = Required<Omit<RetryDashboardOptions, 'guard' | 'allowUnauthenticated' | 'imports' | 'tokenSecret'>> & {
  guard?: Type<CanActivate> | CanActivate;
  open: boolean;
  tokenSecret?: Buffer;
};

export const DEFAULT_DASHBOARD_PATH = '/retry';
export const DEFAULT_TOKEN_TTL_MS = 12 * 60 * 60 * 1000;
const MIN_SECRET_BYTES = 32;

const fail = (key: string, problem: string, fix: string): never => {
  throw new RetryConfigError(`dashboard.${key}`, problem, fix);
};

/** Checks the options and fills the defaults; the caller's object is not changed. */
export function resolveDashboardConfig(options: RetryDashboardOptions): DashboardConfig {
  const path = normalisePath(options.path ?? DEFAULT_DASHBOARD_PATH);
  const guard = options.guard;
  if (guard !== undefined && typeof guard !== 'function' && typeof (guard as Partial<CanActivate>)?.canActivate !== 'function') {
    fail('guard', 'is neither a guard class nor an object with canActivate()', 'Pass a class implementing CanActivate or an instance of one.');
  }
  if (options.allowUnauthenticated !== undefined && typeof options.allowUnauthenticated !== 'boolean') {
    fail('allowUnauthenticated', `is ${JSON.stringify(options.allowUnauthenticated)}`, 'Pass true or false.');
  }
  if (options.wholeVhost !== undefined && typeof options.wholeVhost !== 'boolean') {
    fail('wholeVhost', `is ${JSON.stringify(options.wholeVhost)}`, "Pass true to see every application's parked messages, or false (the default).");
  }
  const secret = options.tokenSecret;
  const tokenSecret = secret === undefined || Buffer.isBuffer(secret) ? secret : Buffer.from(String(secret), 'utf8');
  if (tokenSecret && tokenSecret.length < MIN_SECRET_BYTES) {
    fail('tokenSecret', `has ${tokenSecret.length} bytes`, `Use at least ${MIN_SECRET_BYTES} random bytes, the same on every instance.`);
  }
  const tokenTtlMs = options.tokenTtlMs ?? DEFAULT_TOKEN_TTL_MS;
  if (!Number.isInteger(tokenTtlMs) || tokenTtlMs < 60_000) {
    fail('tokenTtlMs', `is ${JSON.stringify(options.tokenTtlMs)}`, 'Pass a whole number of milliseconds, at least 60000.');
  }
  const trustedOrigins = (options.trustedOrigins ?? []).map(
    (origin, i) =>
      parseOrigin(origin) ??
      fail(
        `trustedOrigins[${i}]`,
        `is ${JSON.stringify(origin)}`,
        'Pass an origin such as https://ops.example.com (scheme, host, optional port; no path).',
      ),
  );
  const allowedHosts = (options.allowedHosts ?? []).map((host, i) => {
    if (typeof host !== 'string' || !/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/i.test(host)) {
      fail(`allowedHosts[${i}]`, `is ${JSON.stringify(host)}`, 'Pass a host name or name:port, such as orders or orders:3000.');
    }
    return host.toLowerCase();
  });
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS;
  const { min, max } = HEARTBEAT_INTERVAL_RANGE;
  if (!Number.isInteger(heartbeatIntervalMs) || heartbeatIntervalMs < min || heartbeatIntervalMs > max) {
    fail(
      'heartbeatIntervalMs',
      `is ${JSON.stringify(options.heartbeatIntervalMs)}`,
      'Pass a whole number of milliseconds from 250 to 60000 (default 5000).',
    );
  }
  const open = guard === undefined && options.allowUnauthenticated === true;
  return { path, guard, open, tokenSecret, tokenTtlMs, trustedOrigins, allowedHosts, wholeVhost: options.wholeVhost === true, heartbeatIntervalMs };
}

/** `/retry`, `retry/`, `//ops//retry` -> `/retry`, `/ops/retry`; anything but plain path segments is refused. */
export function normalisePath(path: string): string {
  const segments = typeof path === 'string' ? path.split('/').filter((s) => s !== '') : [];
  if (segments.length === 0 || !segments.every((s) => /^[A-Za-z0-9._~-]+$/.test(s) && s !== '.' && s !== '..')) {
    fail('path', `is ${JSON.stringify(path)}`, 'Pass a path such as /retry or /ops/parked (letters, digits, . _ ~ -; no route parameters).');
  }
  return `/${segments.join('/')}`;
}

/** The canonical `scheme://host[:port]` of an origin, or undefined when it is not one. */
export function parseOrigin(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/' || url.search || url.hash || url.username || url.password)
      return undefined;
    if (!/^https?:\/\/[^/]+\/?$/.test(origin)) return undefined;
    return url.origin;
  } catch {
    return undefined;
  }
}
