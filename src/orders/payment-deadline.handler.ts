import { Injectable, Logger } from '@nestjs/common';
import { RetryWithBackoff, type RetryContext } from 'nestjs-amqp-retry';
import { ORDERS_EXCHANGE, PAYMENT_DEADLINE, type PaymentDeadline } from './order.js';
import { OrderProgress } from './order.progress.js';

/** Receives the delayed "payment deadline" of each order: shows delayed delivery and how late it arrived. */
@Injectable()
export class PaymentDeadlineHandler {
  private readonly logger = new Logger(PaymentDeadlineHandler.name);

  constructor(private readonly progress: OrderProgress) {}

  @RetryWithBackoff({ queue: 'example.orders.payment-deadline', exchange: ORDERS_EXCHANGE, routingKey: PAYMENT_DEADLINE })
  onDeadline(deadline: PaymentDeadline, ctx: RetryContext): void {
    const late = Date.now() - Date.parse(String(ctx.message.properties.headers?.['x-delay-due-at']));
    const outcome = this.progress.outcomeOf(deadline.orderId) ?? 'still unpaid: it would be cancelled now';
    this.logger.log(`order ${deadline.orderId}: payment deadline reached (${late} ms after due), ${outcome}`);
    this.progress.deadlineReached(deadline.orderId);
  }
}
