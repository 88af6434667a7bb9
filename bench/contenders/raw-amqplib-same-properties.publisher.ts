import { randomUUID } from 'node:crypto';
import amqp from 'amqplib';
import type { BenchBody, PublisherContender } from './contender.js';

/**
 * The publishing baseline doing the library's work on the wire: amqplib's confirm channel, one callback per message,
 * with the two properties RetryPublisher adds to every publish and raw-amqplib.publisher.ts leaves out: a message id
 * (a random UUID, as the library's default) and `mandatory` (returns are listened to and ignored). What separates it
 * from the plain baseline is the broker's and amqplib's cost of those properties; what separates the library from it
 * is the library's own code (docs/performance.md, "Publishing").
 */
export const publisher: PublisherContender = {
  async start({ url }) {
    const model = await amqp.connect(url, { noDelay: true });
    const channel = await model.createConfirmChannel();
    channel.on('return', () => undefined);
    return {
      publish: (exchange: string, routingKey: string, body: BenchBody) =>
        new Promise<void>((resolve, reject) => {
          const content = Buffer.from(JSON.stringify(body));
          const properties = { persistent: true, contentType: 'application/json', messageId: randomUUID(), mandatory: true };
          channel.publish(exchange, routingKey, content, properties, (error: unknown) =>
            error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(),
          );
        }),
      stop: () => model.close(),
    };
  },
};
