import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RetryModule } from 'nestjs-amqp-retry';
import { RetryHealthIndicator } from 'nestjs-amqp-retry/health';
import { HealthController } from './ops/health.controller.js';
import { MetricsController } from './ops/metrics.controller.js';
import { OrderProgress } from './orders/order.progress.js';
import { OrderSeeder } from './orders/order.seeder.js';
import { PaymentDeadlineHandler } from './orders/payment-deadline.handler.js';
import { PaymentGateway } from './orders/payment.gateway.js';
import { PaymentHandler } from './orders/payment.handler.js';

@Module({
  // AMQP_URL, RETRY_* from the environment; Prometheus metrics in prom-client's default registry.
  imports: [RetryModule.forRoot({ metrics: true }), TerminusModule],
  controllers: [HealthController, MetricsController],
  providers: [PaymentGateway, PaymentHandler, PaymentDeadlineHandler, OrderProgress, OrderSeeder, RetryHealthIndicator],
})
export class AppModule {}
