import { errorMessage } from '../core/error-message.js';
import type { RetryLogger } from '../core/retry-logger.js';
import type { AmqpConnection } from './amqp-connection.js';

/** The queues and exchanges a guard checks, by name. */
export interface GuardedTopology {
  exchanges: readonly string[];
  queues: readonly string[];
}

/**
 * Makes sure what a nack dead-letters into still exists. A classic queue dead-letters without confirms: a message
 * nacked into a deleted exchange or tier queue is dropped silently by the broker. So before nacking, the consumer
 * asks the guard, which checks every exchange and queue of the retry path (passively, on a channel of its own, as a
 * 404 closes the channel), declares the whole topology again if an operator deleted any of it, and logs that.
 *
 * Checks are shared: every nack decided while one runs waits for the next one to start after it, so a burst of
 * failures costs one round of checks, and a deletion is seen by every nack decided after it.
 */
export class TopologyGuard {
  private running?: Promise<void>;
  private next?: Promise<void>;

  constructor(
    private readonly connection: AmqpConnection,
    private readonly topology: GuardedTopology,
    private readonly redeclare: () => Promise<unknown>,
    private readonly logger: RetryLogger,
    private readonly owner: string,
  ) {}

  /** Resolves once a check that started after this call found everything (or declared it again); rejects if it could not. */
  ensure(): Promise<void> {
    if (!this.running) return this.start();
    this.next ??= this.running.catch(() => undefined).then(() => {
      this.next = undefined;
      return this.start();
    });
    return this.next;
  }

  private start(): Promise<void> {
    const run = this.check().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }

  private async check(): Promise<void> {
    const missing = await this.findMissing();
    if (missing === undefined) return;
    this.logger.error(`${this.owner}: ${missing} was deleted; declaring the retry topology again`);
    await this.redeclare();
    this.logger.log(`${this.owner}: declared the retry topology again`);
  }

  /** The first missing exchange or queue, described; undefined when all exist. */
  private async findMissing(): Promise<string | undefined> {
    const channel = await this.connection.createChannel('retry topology check', true);
    try {
      for (const name of this.topology.exchanges) {
        if (!(await exists(() => channel.checkExchange(name)))) return `the exchange "${name}"`;
      }
      for (const name of this.topology.queues) {
        if (!(await exists(() => channel.checkQueue(name)))) return `the queue "${name}"`;
      }
      return undefined;
    } finally {
      await channel.close().catch(() => undefined); // a 404 closed it already
    }
  }
}

/** True unless the passive check fails with 404; any other failure (connection lost) is thrown. */
async function exists(check: () => Promise<unknown>): Promise<boolean> {
  try {
    await check();
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code === 404) return false;
    throw new Error(`could not check the retry topology: ${errorMessage(error)}`, { cause: error });
  }
}
