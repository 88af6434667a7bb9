import type { Channel } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { SharedChannel } from '../amqp/channel-close.settler.js';
import { existsOn } from '../amqp/queue-exists.probe.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { errorMessage } from '../core/text/error-message.format.js';

/**
 * Notices a partitioned handler's hash exchange deleted while the application runs, and has it declared again with its
 * bindings (`restore`). Nothing else would: a nack checks only the retry topology; a publish to the missing exchange
 * is refused, one to the handler's own exchange reaches nothing, and every partition waits, empty.
 *
 * `check` runs on the partitions' heartbeat: one passive check at a time (a heartbeat that finds one running skips),
 * on a channel of its own, opened again after the 404 that closes it, and none while the connection is down. Once the
 * exchange is found missing, `restore` is tried each heartbeat until it succeeds: one warning when it is found
 * missing, one when a restore first fails, one line when it is back.
 */
export class HashExchangeWatch {
  private running = false;
  private closed = false;
  private missing = false;
  private failedOnce = false;
  private readonly channel = new SharedChannel<Channel>();

  constructor(
    private readonly connection: AmqpConnection,
    private readonly queue: string,
    private readonly exchange: string,
    private readonly restore: () => Promise<void>,
    private readonly logger: RetryLogger,
  ) {}

  check(): void {
    if (this.running || this.closed || !this.connection.isConnected) return;
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
      if (this.closed) void this.close(); // a check that ran on while close() came opened the channel again
    });
  }

  /** Closes the checking channel; no check starts after. */
  async close(): Promise<void> {
    this.closed = true;
    const channel = await this.channel.take()?.catch(() => undefined);
    await channel?.close().catch(() => undefined);
  }

  private async run(): Promise<void> {
    try {
      if (!this.missing) {
        if (await this.exists()) return;
        this.missing = true;
        this.failedOnce = false;
        this.logger.warn(
          `"${this.queue}": the hash exchange "${this.exchange}" was deleted while the application runs; what was published to it meanwhile reached no partition. Declaring it again, with the partitions bound in their order and the handler's exchange bound into it (docs/partitions.md)`,
        );
      }
      await this.restore();
      this.missing = false;
      this.logger.log(`"${this.queue}": declared the hash exchange "${this.exchange}" again and bound its partitions`);
    } catch (error) {
      // A check that failed otherwise than with a 404 (the connection lost): the next heartbeat looks again.
      if (!this.missing || this.failedOnce) return;
      this.failedOnce = true;
      this.logger.warn(
        `"${this.queue}": could not declare the hash exchange "${this.exchange}" again (${errorMessage(error)}); trying again each heartbeat`,
      );
    }
  }

  private async exists(): Promise<boolean> {
    const channel = await this.channel.get((forget) =>
      this.connection.createChannel('hash exchange check', true).then((open) => open.on('close', forget)),
    );
    return existsOn(channel, (open) => open.checkExchange(this.exchange));
  }
}
