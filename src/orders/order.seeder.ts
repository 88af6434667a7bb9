import { Injectable, Logger } from '@nestjs/common';
import { RetryPublisher } from 'nestjs-amqp-retry';
import { ORDER_CREATED, ORDERS_EXCHANGE, PAYMENT_DEADLINE, type OrderCreated, type PaymentDeadline } from './order.js';
import { OrderProgress } from './order.progress.js';

/** How long a customer has to pay; short, so that the example shows it. */
const PAYMENT_WINDOW = '8s';

/**
 * Plays the shop: publishes a few orders once the service has started (main.ts calls seed() after listen), one of
 * them invalid (parked at once), and for each a payment deadline delivered PAYMENT_WINDOW later. Not from a bootstrap
 * hook: RetryModule starts its consumers after every other module's bootstrap, so orders published there were
 * handled (and their attempts logged) before the "Consuming ..." lines said the handlers had started.
 */
@Injectable()
export class OrderSeeder {
  private readonly logger = new Logger('Shop');

  constructor(
    private readonly publisher: RetryPublisher,
    private readonly progress: OrderProgress,
  ) {}

  async seed(): Promise<void> {
    const count = Number(process.env.EXAMPLE_ORDERS ?? 6);
    const orders: OrderCreated[] = Array.from({ length: count }, (_, i) => ({
      id: i + 1,
      customer: `customer-${i + 1}`,
      amountCents: i === count - 1 ? -100 : 1_000 * (i + 1),
    }));
    this.progress.expect(count, count);
    for (const order of orders) {
      await this.publisher.publish(ORDERS_EXCHANGE, ORDER_CREATED, order);
      const deadline: PaymentDeadline = { orderId: order.id };
      await this.publisher.publish(ORDERS_EXCHANGE, PAYMENT_DEADLINE, deadline, { delay: PAYMENT_WINDOW });
    }
    this.logger.log(`published ${count} orders to exchange "${ORDERS_EXCHANGE}", each with a payment deadline in ${PAYMENT_WINDOW}`);
  }
}
