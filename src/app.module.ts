import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RetryDashboardModule, RetryModule } from 'nestjs-amqp-retry';
import { RetryHealthIndicator } from 'nestjs-amqp-retry/health';
import { HealthController } from './ops/health.controller.js';
import { MetricsController } from './ops/metrics.controller.js';
import { OrderProgress } from './orders/order.progress.js';
import { OrderSeeder } from './orders/order.seeder.js';
import { PaymentDeadlineHandler } from './orders/payment-deadline.handler.js';
import { PaymentGateway } from './orders/payment.gateway.js';
import { PaymentHandler } from './orders/payment.handler.js';
import { ShippingModule } from './shipping/shipping.module.js';

@Module({
  imports: [
    // AMQP_URL, RETRY_* from the environment; Prometheus metrics in prom-client's default registry.
    RetryModule.forRoot({ metrics: true }),
    TerminusModule,
    ShippingModule,
    // The parked-messages page at http://127.0.0.1:3000/retry. OPEN, for local use only: main.ts listens on the
    // loopback address. Anywhere else, pass `guard` (who may read, replay and purge) and drop allowUnauthenticated.
    RetryDashboardModule.forRoot({ path: '/retry', allowUnauthenticated: true }),
  ],
  controllers: [HealthController, MetricsController],
  providers: [PaymentGateway, PaymentHandler, PaymentDeadlineHandler, OrderProgress, OrderSeeder, RetryHealthIndicator],
})
export class AppModule {}
