import { Controller, Module, type Type } from '@nestjs/common';
import { ClientsModule, Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { RetryEngine, RetryModule, type RetryModuleOptions } from 'nestjs-amqp-retry';
import { RetryClient, type RetryRmqContext } from 'nestjs-amqp-retry/transport';

export const TRANSPORT_CLIENT = 'CONFORMANCE_CLIENT';

/** A transport application: a request answered, an event retried once on its pattern's schedule. */
export function transportModule(queue: string, options: RetryModuleOptions): Type<unknown> {
  @Controller()
  class ConformanceController {
    @MessagePattern('status')
    status(@Payload() query: { id: number }): string {
      return `status of ${query.id}`;
    }

    @EventPattern<string>('requested', { retry: { delays: ['200ms'], maxAttempts: 3 } })
    requested(@Payload() _request: unknown, @Ctx() ctx: RetryRmqContext): void {
      if (ctx.getRetryContext().attempt < 2) throw new Error('busy');
    }
  }

  @Module({
    imports: [
      RetryModule.forRoot({ ...options, delayedDelivery: false }),
      ClientsModule.registerAsync([
        {
          name: TRANSPORT_CLIENT,
          inject: [RetryEngine],
          useFactory: (engine: RetryEngine) => ({ customClass: RetryClient, options: { queue, engine } }),
        },
      ]),
    ],
    controllers: [ConformanceController],
  })
  class TransportModule {}
  return TransportModule;
}
