import type { Channel } from 'amqplib';

/**
 * Whether a queue exists: a passive declare on a channel of its own (a 404 closes the channel it happens on). Only a
 * 404 means "no": any other failure (a lost connection, a quorum queue between leaders, a refused channel) is thrown,
 * so that a caller never acts on an absence it did not see.
 */
export const queueExists = (open: () => Promise<Channel>, queue: string): Promise<boolean> => exists(open, (channel) => channel.checkQueue(queue));

/** Whether an exchange exists, as queueExists answers for a queue. */
export const exchangeExists = (open: () => Promise<Channel>, exchange: string): Promise<boolean> =>
  exists(open, (channel) => channel.checkExchange(exchange));

async function exists(open: () => Promise<Channel>, check: (channel: Channel) => Promise<unknown>): Promise<boolean> {
  const channel = await open();
  try {
    await check(channel);
    return true;
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === 404) return false;
    throw error;
  } finally {
    await channel.close().catch(() => undefined); // closed by the broker already after a 404
  }
}
