import { Module } from '@nestjs/common';
import { RetryDashboardModule, RetryModule } from 'nestjs-amqp-retry';
import { OrderProgress } from './orders/order.progress.js';
import { OrderSeeder } from './orders/order.seeder.js';
import { PaymentDeadlineHandler } from './orders/payment-deadline.handler.js';
import { PaymentGateway } from './orders/payment.gateway.js';
import { PaymentHandler } from './orders/payment.handler.js';

@Module({
  imports: [
    RetryModule.forRoot(), // AMQP_URL, RETRY_* from the environment
    // The parked-messages page at http://127.0.0.1:3000/retry. OPEN, for local use only: main.ts listens on the
    // loopback address. Anywhere else, pass `guard` (who may read, replay and purge) and drop allowUnauthenticated.
    RetryDashboardModule.forRoot({ path: '/retry', allowUnauthenticated: true }),
  ],
  providers: [PaymentGateway, PaymentHandler, PaymentDeadlineHandler, OrderProgress, OrderSeeder],
})
export class AppModule {}
