import type { ConfirmChannel } from 'amqplib';

/**
 * Moves every message waiting in queue `from` to queue `to`, one at a time: each is published to `to` by name (the
 * default exchange, mandatory, with its body, properties and headers) and taken off `from` only once the broker has
 * confirmed the copy. A crash midway loses nothing: the message not yet acked goes back to `from` (and may be copied
 * twice). Returns how many it moved.
 */
export async function moveQueue(channel: ConfirmChannel, from: string, to: string): Promise<number> {
  await channel.checkQueue(to); // a missing target would return every copy: fail before taking anything
  let moved = 0;
  for (let message = await channel.get(from); message !== false; message = await channel.get(from)) {
    const { content, properties } = message;
    const options = Object.fromEntries(Object.entries(properties).filter(([, value]) => value !== undefined));
    let returned = false; // the broker sends a return before the confirm of the same message
    const onReturn = () => (returned = true);
    channel.on('return', onReturn);
    try {
      await new Promise<void>((resolve, reject) =>
        channel.publish('', to, content, { ...options, mandatory: true }, (error) => (error ? reject(error) : resolve())),
      );
    } finally {
      channel.off('return', onReturn);
    }
    if (returned) throw new Error(`The broker returned the copy: no queue "${to}" took it (the message stays in "${from}")`);
    channel.ack(message);
    moved++;
  }
  return moved;
}
