import { SetMetadata } from '@nestjs/common';
import type { RetryHandlerOptions } from '../core/config/retry.options.js';
import { RETRY_HANDLER_METADATA } from './retry.constants.js';

/**
 * Makes a provider or controller method the handler of a queue, with broker-side retries and a parking queue.
 * The handler receives the JSON-parsed body and a RetryContext; throwing retries it, NonRetryableError parks it.
 * Options are validated when the application starts.
 *
 * @example
 * ```ts
 * @RetryWithBackoff({ queue: 'orders.created', exchange: 'orders', routingKey: 'order.created', delays: ['1s', '10s'] })
 * async onOrderCreated(order: OrderCreated, ctx: RetryContext) {}
 * ```
 */
export const RetryWithBackoff = (options: RetryHandlerOptions): MethodDecorator => SetMetadata(RETRY_HANDLER_METADATA, options);
