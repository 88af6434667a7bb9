import { Module } from '@nestjs/common';
import { ClientsModule } from '@nestjs/microservices';
import { RetryEngine } from 'nestjs-amqp-retry';
import { RetryClient } from 'nestjs-amqp-retry/transport';
import { SHIPPING_CLIENT, SHIPPING_QUEUE } from './shipment.js';
import { ShippingController } from './shipping.controller.js';

/**
 * The microservice side of the example (its queue is consumed by the RetryServer that main.ts connects) and the
 * client the payment handler sends shipment requests with. The client rides the module's engine: one pair of
 * connections and one delay forwarder for the whole application (docs/transport.md, hybrid applications).
 */
@Module({
  imports: [
    ClientsModule.registerAsync([
      {
        name: SHIPPING_CLIENT,
        inject: [RetryEngine],
        useFactory: (engine: RetryEngine) => ({ customClass: RetryClient, options: { queue: SHIPPING_QUEUE, engine } }),
      },
    ]),
  ],
  controllers: [ShippingController],
  exports: [ClientsModule],
})
export class ShippingModule {}
