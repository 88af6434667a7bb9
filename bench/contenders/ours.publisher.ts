import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RetryModule, RetryPublisher } from 'nestjs-amqp-retry';
import type { BenchBody, PublisherContender } from './contender.js';

/**
 * This library's publishing as an application uses it: RetryPublisher from a Nest application context with no
 * handlers, delayed delivery off (so no ladder is declared or consumed: only the publishing connection works).
 */
export const publisher: PublisherContender = {
  async start({ url }) {
    @Module({ imports: [RetryModule.forRoot({ url, delayedDelivery: false })] })
    class BenchPublishModule {}

    const app = await NestFactory.createApplicationContext(BenchPublishModule, { logger: false });
    const retryPublisher = app.get(RetryPublisher);
    return {
      publish: (exchange: string, routingKey: string, body: BenchBody) => retryPublisher.publish(exchange, routingKey, body),
      stop: () => app.close(),
    };
  },
};
