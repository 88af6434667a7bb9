import amqp from 'amqplib';
import type { BenchBody, PublisherContender } from './contender.js';

/**
 * The publishing baseline: amqplib's confirm channel alone, one callback per message, the same JSON body and
 * properties as the library's (minus its messageId and `mandatory` flag). It ignores publish()'s `false` (write
 * buffer full) as most code does, so under a flood amqplib buffers every message it is given.
 */
export const publisher: PublisherContender = {
  async start({ url }) {
    const model = await amqp.connect(url, { noDelay: true });
    const channel = await model.createConfirmChannel();
    return {
      publish: (exchange: string, routingKey: string, body: BenchBody) =>
        new Promise<void>((resolve, reject) => {
          const content = Buffer.from(JSON.stringify(body));
          channel.publish(exchange, routingKey, content, { persistent: true, contentType: 'application/json' }, (error: unknown) =>
            error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(),
          );
        }),
      stop: () => model.close(),
    };
  },
};
