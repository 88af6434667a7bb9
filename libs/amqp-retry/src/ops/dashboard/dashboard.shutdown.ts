import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { type BeforeApplicationShutdown, Injectable, type OnApplicationBootstrap, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';

/** How often, once the HTTP server is closing, connections without a request are looked for. */
const SWEEP_MS = 100;
/** How long a connection that was ended may take to close before it is destroyed. */
const END_GRACE_MS = 1_000;
/** The sweeping stops after this long even if the server never closed (it never holds the process: unref'd). */
const SWEEP_LIMIT_MS = 10 * 60_000;

/**
 * Keeps a page left open in a browser from holding `app.close()`.
 *
 * Nest closes its HTTP server after `beforeApplicationShutdown`, and Node's server.close() waits for every open
 * connection, closing only those idle after a request. Two kinds of a browser's connections never count as idle:
 * - the one the page asks for fresh figures on every few seconds (keep-alive): from this hook on, every answer of the
 *   page says `Connection: close`, so it closes after its answer;
 * - one the browser opened ahead of need and never sent a request on (Chromium preconnects): Node waits for its
 *   headers until `headersTimeout` (60 s), so app.close() took 60 to 90 s whenever Chromium had one open. Once the
 *   server is closing, such connections are ended (and destroyed if they linger), as Node ends idle ones.
 * A connection with a request in flight is left to finish its answer, whichever route it asked. No 'upgrade' listener
 * is added: with none, Node closes upgrade requests itself, and one of ours would leave them open. Nest closes its
 * WebSocket gateways before the HTTP server, so by the time the server is closing their connections are theirs to
 * have closed.
 */
@Injectable()
export class DashboardShutdown implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private closing = false;
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  /** Requests in flight per connection. */
  private readonly inFlight = new WeakMap<Socket, number>();
  private readonly endedAt = new WeakMap<Socket, number>();
  private sweeper?: NodeJS.Timeout;

  constructor(@Optional() private readonly adapterHost?: HttpAdapterHost) {}

  get isClosing(): boolean {
    return this.closing;
  }

  /** Tracks the HTTP server's connections, when the application has one (an application context has none). */
  onApplicationBootstrap(): void {
    const server: unknown = this.adapterHost?.httpAdapter?.getHttpServer();
    if (!isHttpServer(server)) return;
    this.server = server;
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    server.on('request', (request: { socket: Socket }, response: { once(event: 'close', listener: () => void): void }) => {
      const { socket } = request;
      this.inFlight.set(socket, (this.inFlight.get(socket) ?? 0) + 1);
      response.once('close', () => this.inFlight.set(socket, (this.inFlight.get(socket) ?? 1) - 1));
    });
  }

  beforeApplicationShutdown(): void {
    this.closing = true;
    const server = this.server;
    if (!server || this.sweeper) return;
    const started = Date.now();
    this.sweeper = setInterval(() => {
      if (Date.now() - started > SWEEP_LIMIT_MS) return this.stopSweeping();
      if (server.listening) return; // server.close() not called yet: new requests are still welcome
      for (const socket of this.sockets) this.endIfUnused(socket);
    }, SWEEP_MS).unref();
    server.once('close', () => this.stopSweeping());
  }

  /** Ends a connection without a request in flight; destroys one that was ended and is still open after a grace. */
  private endIfUnused(socket: Socket): void {
    if ((this.inFlight.get(socket) ?? 0) > 0 || socket.destroyed) return;
    const ended = this.endedAt.get(socket);
    if (ended === undefined) {
      this.endedAt.set(socket, Date.now());
      socket.end();
    } else if (Date.now() - ended > END_GRACE_MS) socket.destroy();
  }

  private stopSweeping(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}

function isHttpServer(value: unknown): value is Server {
  const server = value as Partial<Server> | undefined;
  return typeof server?.on === 'function' && typeof server.once === 'function' && 'listening' in (server as object);
}
