import { Injectable } from '@nestjs/common';
import { NonRetryableError } from 'nestjs-amqp-retry';
import type { OrderCreated } from './order.js';

/** A payment provider that is down now and then: each charge fails with probability PAYMENT_FAILURE_RATE (default 0.5). */
@Injectable()
export class PaymentGateway {
  private readonly failureRate = Number(process.env.PAYMENT_FAILURE_RATE ?? 0.5);

  async charge(order: OrderCreated): Promise<void> {
    if (order.amountCents <= 0) throw new NonRetryableError(`order ${order.id} has a non-positive amount (${order.amountCents})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
    if (Math.random() < this.failureRate) throw new Error(`payment provider timed out charging order ${order.id}`);
  }
}
