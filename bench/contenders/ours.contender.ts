import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RetryDashboardModule, RetryModule, RetryWithBackoff, type RetryContext } from 'nestjs-amqp-retry';
import type { BenchBody, Contender } from './contender.js';

/**
 * This library as an application uses it: the built package, one @RetryWithBackoff handler in a Nest application
 * context, one retry tier (so a failed first attempt is retried once, and the second attempt is the last). A variant's
 * options (bench/scenarios/variants.ts) are added to the module's and the handler's; its `console`, the retry
 * console's module beside it (its heartbeat, its observer).
 */
export const contender: Contender = {
  async start({ url, queue, prefetch, retryDelayMs, handle, variant }) {
    // Decorators read their options when the class is defined, hence classes per start.
    @Injectable()
    class BenchHandler {
      @RetryWithBackoff({ queue, delays: [retryDelayMs], ...variant?.handler })
      async onMessage(body: BenchBody, context: RetryContext): Promise<void> {
        handle(body, context.attempt);
      }
    }

    const imports = [RetryModule.forRoot({ url, prefetch, ...variant?.module })];
    if (variant?.console) imports.push(RetryDashboardModule.forRoot({ allowUnauthenticated: true, ...variant.console }));
    @Module({ imports, providers: [BenchHandler] })
    class BenchModule {}

    const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
    return { stop: () => app.close() };
  },
};
