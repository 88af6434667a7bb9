import { RabbitMQModule, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { BenchBody, Contender } from '../../contenders/contender.js';

/**
 * @golevelup/nestjs-rabbitmq as its README shows it: one @RabbitSubscribe handler, which the library acks when it
 * returns. Direct reply-to is off (it would add a consumer for RPC replies that this bench never uses), and Nagle
 * is off through amqp-connection-manager's connectionOptions, as for every contender.
 */
export const contender: Contender = {
  async start({ url, queue, prefetch, handle }) {
    @Injectable()
    class BenchHandler {
      @RabbitSubscribe({ queue, queueOptions: { durable: true } })
      async onMessage(body: BenchBody): Promise<void> {
        handle(body, 1);
      }
    }

    @Module({
      imports: [
        RabbitMQModule.forRoot({
          uri: url,
          prefetchCount: prefetch,
          enableDirectReplyTo: false,
          connectionManagerOptions: { connectionOptions: { noDelay: true } },
        }),
      ],
      providers: [BenchHandler],
    })
    class BenchModule {}

    const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
    return { stop: () => app.close() };
  },
};
