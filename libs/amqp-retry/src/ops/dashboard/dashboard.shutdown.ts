import { type BeforeApplicationShutdown, Injectable } from '@nestjs/common';

/**
 * Whether the application is shutting down, for the page's routes. Nest closes its HTTP server after
 * `beforeApplicationShutdown`, and Node's server.close() waits for every open connection; a browser with the page open
 * asks for fresh figures every few seconds on one keep-alive connection, which then never falls idle long enough to be
 * closed, and `app.close()` never returns. From this hook on, every answer of the page says `Connection: close`.
 */
@Injectable()
export class DashboardShutdown implements BeforeApplicationShutdown {
  private closing = false;

  get isClosing(): boolean {
    return this.closing;
  }

  beforeApplicationShutdown(): void {
    this.closing = true;
  }
}
