import type { Channel, GetMessage, Options } from 'amqplib';

/**
 * amqplib's `get()`, ended by the channel's close. Once the broker answered that a message comes, amqplib waits for
 * its header and body frames with no pending reply left to reject: should the connection end between them (a lost
 * socket, a missed heartbeat, our own close; more likely the larger the body, since its frames span several reads),
 * the promise never settles, and whoever waits on it (a parking queue's walk and its lock) waits for good.
 */
export function getSettled(channel: Channel, queue: string, options?: Options.Get): Promise<GetMessage | false> {
  return new Promise<GetMessage | false>((resolve, reject) => {
    const closed = () => reject(new Error(`the channel closed while a message of "${queue}" was being read`));
    channel.once('close', closed);
    channel
      .get(queue, options)
      .then(resolve, reject)
      .finally(() => channel.off('close', closed));
  });
}
