import type { Channel } from 'amqplib';

/** Whether a queue exists: a passive declare on a channel of its own (a 404 closes the channel it happens on). */
export async function queueExists(open: () => Promise<Channel>, queue: string): Promise<boolean> {
  const channel = await open();
  try {
    await channel.checkQueue(queue);
    return true;
  } catch {
    return false;
  } finally {
    await channel.close().catch(() => undefined); // closed by the broker already after a 404
  }
}
