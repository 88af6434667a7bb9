import type { DeliveryRouter, HandlerInvoker } from '../amqp/retry-delivery.handler.js';
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

/**
 * The same guarantees for a queue whose deliveries are routed (the transport's patterns): one guarded invoker for the
 * queue (its idempotency keys and ordering sequences are the queue's), calling each delivery's own route. Requests
 * ('once') and parks pass through untouched.
 */
export function guaranteedRoutes(config: HandlerConfig, route: DeliveryRouter, logger: RetryLogger): DeliveryRouter {
  if (!config.idempotency && !config.ordering) return route;
  const routed = new WeakMap<object, HandlerInvoker>();
  const guarded = withDeliveryGuarantees(config, (payload, context) => (routed.get(context.message) ?? missingRoute)(payload, context), logger);
  return (payload, message) => {
    const chosen = route(payload, message);
    if (chosen.kind !== 'handle') return chosen;
    routed.set(message, chosen.invoke);
    return { ...chosen, invoke: guarded };
  };
}

const missingRoute: HandlerInvoker = () => Promise.reject(new Error('no route recorded for this delivery'));
