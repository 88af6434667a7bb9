import type { Channel } from 'amqplib';

/** Opens a channel the caller may lose to a broker error (a 404, a 406). */
export type ChannelOpener = () => Promise<Channel>;

/**
 * Whether a queue exists: a passive declare on a channel of its own (a 404 closes it). Any failure but a 404 is
 * thrown (a lost connection, a quorum queue between leaders), so that a caller never acts on an absence it did not see.
 */
export const queueExists = (open: ChannelOpener, queue: string): Promise<boolean> => exists(open, (channel) => channel.checkQueue(queue));

/** Whether an exchange exists, as queueExists answers for a queue. */
export const exchangeExists = (open: ChannelOpener, exchange: string): Promise<boolean> => exists(open, (channel) => channel.checkExchange(exchange));

async function exists(open: ChannelOpener, check: (channel: Channel) => Promise<unknown>): Promise<boolean> {
  const channel = await open();
  try {
    await check(channel);
    return true;
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === 404) return false;
    throw error;
  } finally {
    await channel.close().catch(() => undefined); // a 404 has closed it already
  }
}
