import { closeWhenOpen } from './channel-close.settler.js';
import type { Channel } from 'amqplib';

/**
 * Asks the broker whether a direct reply-to address still has its caller: a passive declare, on one channel reused
 * while it stays open (one round trip per reply, not three). A 404 closes that channel; the next probe opens another.
 */
export class ReplyAddressProbe {
  private channel?: Promise<Channel>;
  private closed = false;

  constructor(private readonly open: () => Promise<Channel>) {}

  /** True: the caller is there; false: it is gone (404); undefined: the broker could not tell (reply anyway). */
  async exists(address: string): Promise<boolean | undefined> {
    if (this.closed) return undefined;
    const opening = (this.channel ??= this.open().then((channel) => {
      channel.on('close', () => {
        if (this.channel === opening) this.channel = undefined;
      });
      return channel;
    }));
    try {
      await (await opening).checkQueue(address);
      return true;
    } catch (error) {
      if (this.channel === opening) this.channel = undefined;
      return (error as { code?: unknown } | null)?.code === 404 ? false : undefined;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const channel = this.channel;
    this.channel = undefined;
    await closeWhenOpen(channel); // at most CLOSE_WAIT_MS: a blocked connection answers no channel.open
  }
}
