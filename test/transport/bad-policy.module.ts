import { Controller, Module } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';

@Controller()
class BadPolicyController {
  @EventPattern<string>('order.bad', { retry: { queue: 'elsewhere', maxAttempts: 2 } })
  bad(): void {}
}

/** A pattern whose retry policy names the queue, which only the server may set. */
@Module({ controllers: [BadPolicyController] })
export class BadPolicyModule {}
