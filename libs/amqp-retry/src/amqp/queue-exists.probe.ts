import type { Channel } from 'amqplib';

/** Opens a channel the caller may lose to a broker error (a 404, a 406). */
export type ChannelOpener = () => Promise<Channel>;

/** Runs `work` on a channel of its own, then closes it whatever happened (a broker error may have closed it already). */
export async function onOwnChannel<T, C extends Channel = Channel>(open: () => Promise<C>, work: (channel: C) => Promise<T>): Promise<T> {
  const channel = await open();
  try {
    return await work(channel);
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/** True for amqplib's error of a passive declare that found nothing (the broker's 404, which closes the channel). */
export const isNotFound = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === 404;

/**
 * Whether a queue exists: a passive declare on a channel of its own (a 404 closes it). Any failure but a 404 is
 * thrown (a lost connection, a quorum queue between leaders), so that a caller never acts on an absence it did not see.
 * A name over AMQP's 255 bytes cannot be a queue's: false, without asking (amqplib would throw a TypeError).
 */
export const queueExists = (open: ChannelOpener, queue: string): Promise<boolean> =>
  Buffer.byteLength(queue) > 255 ? Promise.resolve(false) : exists(open, (channel) => channel.checkQueue(queue));

/**
 * Whether a queue exists and, when it does and `args` are given, whether it takes a declaration with them (false: a
 * 406, it was declared with others), on one channel of its own: a passive declare, then the declaration. Thrown as
 * queueExists throws.
 */
export const queueStillOurs = (open: ChannelOpener, queue: string, args?: Record<string, unknown>): Promise<{ exists: boolean; matches?: boolean }> =>
  onOwnChannel(open, async (channel) => {
    if (!(await existsOn(channel, (opened) => opened.checkQueue(queue)))) return { exists: false };
    if (!args) return { exists: true };
    try {
      await channel.assertQueue(queue, { durable: true, arguments: args });
      return { exists: true, matches: true };
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code === 406) return { exists: true, matches: false };
      throw error;
    }
  });

/** Whether an exchange exists, as queueExists answers for a queue. */
export const exchangeExists = (open: ChannelOpener, exchange: string): Promise<boolean> => exists(open, (channel) => channel.checkExchange(exchange));

const exists = (open: ChannelOpener, check: (channel: Channel) => Promise<unknown>): Promise<boolean> =>
  onOwnChannel(open, (channel) => existsOn(channel, check));

/** Whether a passive check on `channel` finds its target: false on a 404, any other failure thrown. */
export async function existsOn(channel: Channel, check: (channel: Channel) => Promise<unknown>): Promise<boolean> {
  try {
    await check(channel);
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}
