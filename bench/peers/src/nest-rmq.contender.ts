import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload, RmqContext, Transport, type MicroserviceOptions } from '@nestjs/microservices';
import type { Channel, Message } from 'amqplib';
import type { BenchBody, Contender } from '../../contenders/contender.js';

/** The pattern the bench's Nest envelope carries (contenders/registry.ts wraps each body in it). */
const PATTERN = 'bench.message';

/**
 * Nest's own RMQ transport: an @EventPattern handler in a microservice, with manual acks (noAck: false), since
 * automatic acks would drop a message whose handler fails. Nagle is off through socketOptions.connectionOptions.
 */
export const contender: Contender = {
  async start({ url, queue, prefetch, handle }) {
    @Controller()
    class BenchController {
      @EventPattern(PATTERN)
      async onMessage(@Payload() body: BenchBody, @Ctx() context: RmqContext): Promise<void> {
        handle(body, 1);
        (context.getChannelRef() as Channel).ack(context.getMessage() as Message);
      }
    }

    @Module({ controllers: [BenchController] })
    class BenchModule {}

    const app = await NestFactory.createMicroservice<MicroserviceOptions>(BenchModule, {
      transport: Transport.RMQ,
      options: {
        urls: [url],
        queue,
        queueOptions: { durable: true },
        noAck: false,
        prefetchCount: prefetch,
        socketOptions: { connectionOptions: { noDelay: true } },
      },
      logger: false,
    });
    await app.listen();
    return { stop: () => app.close() };
  },
};
