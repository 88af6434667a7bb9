import type { Channel } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp.connection.js';

/**
 * Runs `use` on a channel of its own, then closes the channel whatever happened (a broker error, a 404 or a 406, may
 * have closed it already). `expectClose`: its broker closes are not logged (see AmqpConnection.createChannel).
 */
export async function onChannel<T>(connection: AmqpConnection, purpose: string, use: (c: Channel) => Promise<T>, expectClose = false): Promise<T> {
  const channel = await connection.createChannel(purpose, expectClose);
  try {
    return await use(channel);
  } finally {
    await channel.close().catch(() => undefined);
  }
}
