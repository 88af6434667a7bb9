import amqp from 'amqplib';
import type { BenchBody, Contender } from './contender.js';

/**
 * The baseline: amqplib alone, doing what every contender must do per message (parse the JSON body, call the
 * handler, ack). Nagle off, as in the library, so the comparison measures code and not socket settings.
 */
export const contender: Contender = {
  async start({ url, queue, prefetch, handle }) {
    const model = await amqp.connect(url, { noDelay: true });
    const channel = await model.createChannel();
    await channel.assertQueue(queue, { durable: true });
    await channel.prefetch(prefetch);
    const { consumerTag } = await channel.consume(queue, (message) => {
      if (message === null) return; // cancelled by the broker: the run's own checks report the shortfall
      handle(JSON.parse(message.content.toString()) as BenchBody, 1);
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
