import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RetryRmqContext, RetryServer } from 'nestjs-amqp-retry/transport';
import type { BenchBody, Contender } from './contender.js';

/** The pattern the bench's Nest envelope carries (registry.ts wraps each body in it, as Nest's ClientProxy.emit does). */
const PATTERN = 'bench.message';

/**
 * This library as a Nest transport: an @EventPattern handler in a microservice on RetryServer, one retry tier; the
 * same work and envelope as the Nest RMQ contender (which acks manually), for the transport-to-transport ratio. A
 * variant (bench/scenarios/variants.ts) may give the pattern a `retry` policy of its own and add server options.
 */
export const contender: Contender = {
  async start({ url, queue, prefetch, retryDelayMs, handle, variant }) {
    @Controller()
    class BenchController {
      @EventPattern<string>(PATTERN, variant?.pattern ? { retry: variant.pattern } : undefined)
      async onMessage(@Payload() body: BenchBody, @Ctx() context: RetryRmqContext): Promise<void> {
        handle(body, context.getRetryContext().attempt);
      }
    }

    @Module({ controllers: [BenchController] })
    class BenchModule {}

    const strategy = new RetryServer({ url, queue, prefetch, delays: [retryDelayMs], delayedDelivery: false, ...variant?.module });
    const app = await NestFactory.createMicroservice(BenchModule, { strategy, logger: false });
    await app.listen();
    return { stop: () => app.close() };
  },
};
