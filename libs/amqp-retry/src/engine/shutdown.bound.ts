import { CLOSE_WAIT_MS } from '../amqp/channel-close.settler.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { withinTime } from '../core/time/duration.timer.js';

/** How long a stop may take past twice the shutdown timeout, before the connections close under it. */
const STOP_MARGIN_MS = 2_000;

/** Whether `work` ended well within `limitMs`. */
const endsWithin = (work: Promise<unknown>, limitMs: number): Promise<boolean> =>
  withinTime(
    work.then(() => true),
    limitMs,
    () => new Error('late'),
  ).catch(() => false);

/**
 * The engine's stops, bounded: a broker that blocks publishing (a memory or disk alarm) answers no channel open, and a
 * stop waiting on one would hold the shutdown until the alarm clears. Past twice the shutdown timeout (a partition's
 * rebalance, then its stop, may each take it) plus STOP_MARGIN_MS, a stop is left with a warning; closing the
 * connections under it ends it.
 */
export class ShutdownBound {
  /** Stops that did not end within their bound. */
  private readonly late: Array<Promise<unknown>> = [];

  constructor(
    private readonly shutdownTimeoutMs: number,
    private readonly logger: RetryLogger,
  ) {}

  /** Waits for `stopping` within the bound; past it, warns and keeps it for `closed()`. */
  async stop(stopping: Promise<unknown>): Promise<void> {
    if (await endsWithin(stopping, 2 * this.shutdownTimeoutMs + STOP_MARGIN_MS)) return;
    this.late.push(stopping.catch(() => undefined));
    this.logger.warn(
      `Stopping the consumers took longer than twice the shutdown timeout and ${STOP_MARGIN_MS} ms (does the broker block ` +
        'this connection? see its memory and disk alarms); the connections close under them',
    );
  }

  /** After the connections closed: the late stops waited on them, which ends them. */
  async closed(): Promise<void> {
    await endsWithin(Promise.all(this.late.splice(0)), CLOSE_WAIT_MS);
  }
}
