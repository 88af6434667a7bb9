import type { HandlerInvoker } from '../amqp/retry-delivery.handler.js';
import type { HandlerConfig } from '../core/handler-config.js';
import type { RetryLogger } from '../core/retry-logger.js';
import { handledOnceInvoker } from '../idempotency/handled-once.invoker.js';
import { orderedInvoker } from '../ordering/ordered.invoker.js';

/**
 * The handler call as the delivery path sees it, with what the configuration asks around it: ordering outside (a
 * message waits for its key's turn before it claims its idempotency key, so a waiting copy holds no claim), then
 * idempotency (claim, call, record). Without either, the handler's own invoker.
 */
export function withDeliveryGuarantees(config: HandlerConfig, invoke: HandlerInvoker, logger: RetryLogger): HandlerInvoker {
  let guarded = invoke;
  if (config.idempotency) guarded = handledOnceInvoker(guarded, config.queue, config.idempotency, logger);
  if (config.ordering) guarded = orderedInvoker(guarded, { ...config, ordering: config.ordering }, logger);
  return guarded;
}

/** The distinct stores of some handlers, to close once at shutdown. */
export const idempotencyStoresOf = (configs: ReadonlyArray<Pick<HandlerConfig, 'idempotency'>>) => [
  ...new Set(configs.flatMap((c) => (c.idempotency ? [c.idempotency.store] : []))),
];
