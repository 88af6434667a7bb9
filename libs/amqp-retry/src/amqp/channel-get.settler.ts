import type { Channel, GetMessage, Options } from 'amqplib';

/**
 * amqplib's `get()`, ended by the channel's close: should the connection end between the broker's answer and the
 * message's body frames, amqplib's promise never settles, and whoever waits on it (a walk and its lock) waits for good.
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

/** Every message of `queue`, in order, got unacked through getSettled until none is left. */
export async function getAll(channel: Channel, queue: string): Promise<GetMessage[]> {
  const messages: GetMessage[] = [];
  for (let message = await getSettled(channel, queue); message; message = await getSettled(channel, queue)) messages.push(message);
  return messages;
}
