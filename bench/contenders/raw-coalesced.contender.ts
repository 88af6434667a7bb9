import amqp from 'amqplib';
import { AckCoalescer } from './ack-coalescer.js';
import type { BenchBody, Contender } from './contender.js';

/**
 * The fair baseline for the happy path: raw-amqplib.contender.ts with the library's way of acking (one `multiple`
 * ack per event-loop turn, see ack-coalescer.ts) instead of a frame per message. A socket write per ack is most of
 * a consumer's CPU, so against the per-message baseline the library's figure measures its acking more than its code;
 * against this one it measures what the library adds on top of amqplib.
 */
export const contender: Contender = {
  async start({ url, queue, prefetch, handle }) {
    const model = await amqp.connect(url, { noDelay: true });
    const channel = await model.createChannel();
    await channel.assertQueue(queue, { durable: true });
    await channel.prefetch(prefetch);
    const acks = new AckCoalescer(channel);
    const { consumerTag } = await channel.consume(queue, (message) => {
      if (message === null) return; // cancelled by the broker: the run's own checks report the shortfall
      handle(JSON.parse(message.content.toString()) as BenchBody, 1);
      acks.handled(message);
    });
    return {
      async stop() {
        await channel.cancel(consumerTag);
        acks.flush();
        await model.close();
      },
    };
  },
};
