import { Module } from '@nestjs/common';
import { ClientsModule } from '@nestjs/microservices';
import { RetryClient } from 'nestjs-amqp-retry/transport';
import { SHIPPING_CLIENT, SHIPPING_QUEUE } from './shipment.js';
import { ShippingController } from './shipping.controller.js';

/**
 * The microservice side of the example (its queue is consumed by the RetryServer that main.ts connects) and the
 * client the payment handler sends shipment requests with. The client's forwarder is off: the module runs one.
 */
@Module({
  imports: [
    ClientsModule.register([{ name: SHIPPING_CLIENT, customClass: RetryClient, options: { queue: SHIPPING_QUEUE, delayedDelivery: false } }]),
  ],
  controllers: [ShippingController],
  exports: [ClientsModule],
})
export class ShippingModule {}
