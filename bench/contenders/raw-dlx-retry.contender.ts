import amqp from 'amqplib';
import type { BenchBody, Contender } from './contender.js';

/**
 * The least a hand-rolled broker-side retry needs, as a reference for the library's retry path: a failure is
 * nacked without requeue, dead-lettered through the default exchange into one TTL queue, and dead-lettered back
 * when the TTL expires. No tiers, no parking, no alternate exchange: only the hops that any such design pays.
 */
export const contender: Contender = {
  async start({ url, queue, prefetch, retryDelayMs, handle }) {
    const model = await amqp.connect(url, { noDelay: true });
    const channel = await model.createChannel();
    const retryQueue = `${queue}.retry`; // registry.ts deletes it after the run
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': retryQueue } });
    await channel.assertQueue(retryQueue, {
      durable: true,
      arguments: { 'x-message-ttl': retryDelayMs, 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': queue },
    });
    await channel.prefetch(prefetch);
    const { consumerTag } = await channel.consume(queue, (message) => {
      if (message === null) return;
      const deaths = (message.properties.headers?.['x-death'] ?? []) as Array<{ queue?: string; reason?: string; count?: number }>;
      const rejected = deaths.find((d) => d.queue === queue && d.reason === 'rejected');
      try {
        handle(JSON.parse(message.content.toString()) as BenchBody, 1 + Number(rejected?.count ?? 0));
      } catch {
        return channel.nack(message, false, false);
      }
      channel.ack(message);
    });
    return {
      async stop() {
        await channel.cancel(consumerTag);
        await model.close();
      },
    };
  },
};
