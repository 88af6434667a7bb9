import { Server as HttpServer } from 'node:http';
import type { Socket } from 'node:net';
import { type BeforeApplicationShutdown, Injectable, type OnApplicationBootstrap, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';

/** How often, once the HTTP server is closing, connections that hold it are looked for. */
const SWEEP_MS = 100;
/** The sweeping stops after this long even if the server never closed (it never holds the process: unref'd). */
const SWEEP_LIMIT_MS = 10 * 60_000;

/**
 * Keeps a page left open in a browser from holding `app.close()`. Nest closes its HTTP server after
 * `beforeApplicationShutdown`, and Node's server.close() waits for every open connection without a timeout, closing
 * only those idle at the call. A browser with the page open holds two kinds:
 * - the keep-alive connection the page polls on: from this hook on, every answer says `Connection: close`, and once
 *   the server is closing, Node's `closeIdleConnections()` runs every SWEEP_MS (idle: no request parsed and unanswered);
 * - one preconnected and never sent a byte on (Chromium): Node never counts it idle, so app.close() would wait for it
 *   without end (past the page tests' 60 s hooks). Once the server is closing it is destroyed: no request can have
 *   started on it.
 * Nothing is half-closed (a request arriving after a FIN would run unanswered); a request in flight gets its whole
 * answer. Over HTTPS the sockets are TCP under TLS, whose bytes say nothing of requests: only idle connections are
 * closed there. Upgraded connections (WebSockets) are not idle to Node and send bytes: they are left alone.
 */
@Injectable()
export class DashboardShutdown implements OnApplicationBootstrap, BeforeApplicationShutdown {
  /** True from beforeApplicationShutdown on: every answer then closes its connection. */
  isClosing = false;
  private server?: ClosableServer;
  /** Connections of a plain HTTP server (to find the ones that never sent a byte); none over HTTPS. */
  private readonly sockets = new Set<Socket>();
  private sweeper?: NodeJS.Timeout;

  constructor(@Optional() private readonly adapterHost?: HttpAdapterHost) {}

  /** Watches the HTTP server, when the application has one (an application context has none). */
  onApplicationBootstrap(): void {
    if (this.server) return;
    const server: unknown = this.adapterHost?.httpAdapter?.getHttpServer();
    if (!isClosableServer(server)) return; // none, or an HTTP/2 one (no keep-alive of HTTP/1 to close)
    this.server = server;
    if (!(server instanceof HttpServer)) return; // https.Server: a tls.Server, its connections TCP under TLS
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  beforeApplicationShutdown(): void {
    this.isClosing = true;
    const server = this.server;
    if (!server || this.sweeper) return;
    const started = Date.now();
    this.sweeper = setInterval(() => {
      if (Date.now() - started > SWEEP_LIMIT_MS) return this.stopSweeping();
      if (server.listening) return; // server.close() not called yet: requests are still welcome
      server.closeIdleConnections();
      for (const socket of this.sockets) if (socket.bytesRead === 0) socket.destroy();
    }, SWEEP_MS).unref();
    server.once('close', () => this.stopSweeping());
  }

  private stopSweeping(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}

/** What of Node's http.Server (and https.Server) the sweep uses. */
type ClosableServer = Pick<HttpServer, 'listening' | 'closeIdleConnections' | 'once'>;

function isClosableServer(value: unknown): value is ClosableServer {
  const server = value as Partial<HttpServer> | undefined;
  return typeof server?.closeIdleConnections === 'function' && typeof server.once === 'function' && typeof server.listening === 'boolean';
}
