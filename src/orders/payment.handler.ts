import { Inject, Injectable, Logger } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import { NonRetryableError, RetryWithBackoff, type RetryContext } from 'nestjs-amqp-retry';
import type { RetryClient } from 'nestjs-amqp-retry/transport';
import { ORDER_CREATED, ORDERS_EXCHANGE, type OrderCreated } from './order.js';
import { OrderProgress } from './order.progress.js';
import { PaymentGateway } from './payment.gateway.js';
import { SHIPMENT_REQUESTED, SHIPPING_CLIENT, type ShipmentRequested } from '../shipping/shipment.js';

const DELAYS = ['1s', '2s', '4s'];

/** Charges each new order. Throwing retries it after 1 s, 2 s, 4 s, 4 s; the fifth failure parks it. */
@Injectable()
export class PaymentHandler {
  private readonly logger = new Logger(PaymentHandler.name);

  constructor(
    private readonly gateway: PaymentGateway,
    private readonly progress: OrderProgress,
    // Typed as RetryClient, not ClientProxy: its emit() also takes { delay } (docs/transport.md).
    @Inject(SHIPPING_CLIENT) private readonly shipping: RetryClient,
  ) {}

  @RetryWithBackoff({ queue: 'example.orders.payment', exchange: ORDERS_EXCHANGE, routingKey: ORDER_CREATED, delays: DELAYS, maxAttempts: 5 })
  async onOrderCreated(order: OrderCreated, ctx: RetryContext): Promise<void> {
    const waited = ctx.attempt === 1 ? 'first try' : `after waiting ${DELAYS[Math.min(ctx.attempt - 1, DELAYS.length) - 1]}`;
    this.logger.log(`order ${order.id}: attempt ${ctx.attempt}/${ctx.maxAttempts} (${waited})`);
    try {
      await this.gateway.charge(order);
    } catch (error) {
      if (ctx.isLastAttempt || error instanceof NonRetryableError) this.progress.settled(order.id, 'parked'); // the library parks it
      throw error;
    }
    this.logger.log(`order ${order.id}: paid`);
    // Confirmed by the broker before this resolves; the shipping microservice retries it on its own schedule. Should
    // the emit fail, the payment is retried: a real gateway call must then be idempotent (an order id as its key).
    const shipment: ShipmentRequested = { orderId: order.id };
    await lastValueFrom(this.shipping.emit(SHIPMENT_REQUESTED, shipment), { defaultValue: undefined });
    this.progress.settled(order.id, 'paid');
  }
}
