import { errorMessage } from '../core/text/error-message.format.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { AmqpConnection } from './amqp.connection.js';
import { TargetProbe } from './target.probe.js';

/** The queues and exchanges a guard checks, by name. */
export interface GuardedTopology {
  exchanges: readonly string[];
  queues: readonly string[];
}

/**
 * Makes sure what a nack dead-letters into still exists: a classic queue dead-letters without confirms, so a message
 * nacked into a deleted exchange or tier queue is dropped silently. Before nacking, the consumer asks the guard, which
 * checks the retry path passively and declares the topology again if any of it was deleted. The delay ladder, whose
 * levels dead-letter into one another alike, has a guard of its own (PublishingSide.checkLadder).
 *
 * A nack decided while a check runs waits for that one: a burst of failures costs one round of checks.
 */
export class TopologyGuard {
  private running?: Promise<void>;
  /** The checks, on a channel opened again after a 404 closed it. */
  private readonly probe = new TargetProbe(() => this.connection.createChannel('retry topology check', true));

  constructor(
    private readonly connection: AmqpConnection,
    private readonly topology: GuardedTopology,
    private readonly redeclare: () => Promise<unknown>,
    private readonly logger: RetryLogger,
    private readonly owner: string,
    /** What `redeclare` declares, as the log lines name it. */
    private readonly what = 'the retry topology',
  ) {}

  /** Resolves once a check found everything (or declared it again); rejects if it could not. */
  ensure(): Promise<void> {
    this.running ??= this.check().finally(() => (this.running = undefined));
    return this.running;
  }

  private async check(): Promise<void> {
    const missing = await this.findMissing();
    if (missing === undefined) return;
    this.logger.error(`${this.owner}: ${missing} was deleted; declaring ${this.what} again`);
    await this.redeclare();
    this.logger.log(`${this.owner}: declared ${this.what} again`);
  }

  /** The first missing exchange or queue, described; undefined when all exist. */
  private async findMissing(): Promise<string | undefined> {
    // True unless the passive check fails with 404; any other failure (connection lost) is thrown.
    const exists = (check: Promise<boolean>) =>
      check.catch((error: unknown) => {
        throw new Error(`could not check the retry topology: ${errorMessage(error)}`, { cause: error });
      });
    for (const name of this.topology.exchanges) {
      if (!(await exists(this.probe.exchangeExists(name)))) return `the exchange "${name}"`;
    }
    for (const name of this.topology.queues) {
      if (!(await exists(this.probe.queueExists(name)))) return `the queue "${name}"`;
    }
    return undefined;
  }
}
