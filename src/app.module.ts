import { Module } from '@nestjs/common';
import { RetryModule } from 'nestjs-amqp-retry';
import { OrderProgress } from './orders/order.progress.js';
import { OrderSeeder } from './orders/order.seeder.js';
import { PaymentDeadlineHandler } from './orders/payment-deadline.handler.js';
import { PaymentGateway } from './orders/payment.gateway.js';
import { PaymentHandler } from './orders/payment.handler.js';

@Module({
  imports: [RetryModule.forRoot()], // AMQP_URL, RETRY_* from the environment
  providers: [PaymentGateway, PaymentHandler, PaymentDeadlineHandler, OrderProgress, OrderSeeder],
})
export class AppModule {}
