import { Controller, Logger, UseFilters } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { RetryRmqContext, RetryRpcExceptionFilter } from 'nestjs-amqp-retry/transport';
import { SHIPMENT_REQUESTED, SHIPMENT_STATUS, type ShipmentRequested } from './shipment.js';

/**
 * The shipping part of the example, as a Nest microservice on RetryServer (a hybrid app: it shares the module's
 * connections). The carrier is busy at the first attempt of every other order: the event is retried after 500 ms
 * with this pattern's own policy. The filter hands errors to the transport as thrown (not Nest's "Internal server
 * error"), so a parked copy would name the real cause; on the controller, so that HTTP errors keep Nest's filter.
 */
@Controller()
@UseFilters(RetryRpcExceptionFilter)
export class ShippingController {
  private readonly logger = new Logger(ShippingController.name);
  private readonly shipped = new Map<number, string>();

  @EventPattern<string>(SHIPMENT_REQUESTED, { retry: { delays: ['500ms', '2s'], maxAttempts: 3 } })
  onShipmentRequested(@Payload() request: ShipmentRequested, @Ctx() ctx: RetryRmqContext): void {
    const { attempt, maxAttempts } = ctx.getRetryContext();
    if (attempt === 1 && request.orderId % 2 === 1) {
      this.logger.log(`order ${request.orderId}: carrier busy (attempt ${attempt}/${maxAttempts}), retrying in 500 ms`);
      throw new Error('the carrier is busy');
    }
    this.shipped.set(request.orderId, `shipped at attempt ${attempt}`);
    this.logger.log(`order ${request.orderId}: shipped (attempt ${attempt}/${maxAttempts})`);
  }

  @MessagePattern(SHIPMENT_STATUS)
  status(@Payload() query: { orderId: number }): string {
    return this.shipped.get(query.orderId) ?? 'not shipped';
  }
}
