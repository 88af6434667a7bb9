import type { DeliveryHandler } from '../amqp/queue.consumer.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import {
  answerOf,
  answersUnread,
  type DeliveryRoute,
  type DeliveryRouter,
  type HandlerInvoker,
  type Middleware,
  type PolicyOf,
  type RetryPolicy,
} from '../pipeline/delivery.contracts.js';
import { DeliveryPipeline, type DeliveryPipelineParts } from '../pipeline/delivery.pipeline.js';
import { idempotencyStep } from '../pipeline/idempotency.step.js';
import { inboxStep } from '../pipeline/inbox.step.js';
import { orderingStep } from '../pipeline/ordering.step.js';
import { InPlaceAttempts } from '../pipeline/in-place.retry.js';
import { timeLimitStep } from '../pipeline/time-limit.step.js';
import type { QueueFlowControl } from './queue-flow.control.js';

/**
 * The one place that states what runs around a handler, in order, for every path: decorator handlers, the transport's
 * patterns and each partition of either (the delay forwarder has no handler: only its outcome steps apply).
 *
 * | #  | step         | what it does                                                                 | when                       |
 * |----|--------------|------------------------------------------------------------------------------|----------------------------|
 * | 1  | gate         | rate limit, pause, breaker admission: holds the delivery or gives it back    | rateLimit, breaker, pause  |
 * | 2  | decide       | unreadable body or death history, attempts spent: park before any handler    | always                     |
 * | 3  | route        | the body names the pattern and its policy; a request runs once; else park    | transport                  |
 * | 4  | ordering     | one message per key at a time, in arrival order; 'hold' keeps later ones     | ordering, partitions       |
 * | 5  | idempotency  | claim the key, call, record it (a copy handled already is acked uncalled)    | idempotency                |
 * | 5' | inbox        | a transaction around the call and its record                                 | inbox                      |
 * | 6  | breaker      | counts the call's outcome into the circuit breaker                           | circuitBreaker             |
 * | 7  | hand-over    | from here a stop or a hand-over no longer takes the delivery back            | something waits before it  |
 * | 8  | time limit   | fails the call past `timeout` and aborts its signal                          | timeout                    |
 * | 9  | call         | the user's handler, through Nest's context                                   | always                     |
 * | 10 | outcome      | ack; or the next tier; or park (confirmed, then acked)                       | always                     |
 *
 * Steps 1 and 10 act on the delivery (QueueFlowControl.gate; DeliveryPipeline's park and tier steps); 4 to 8 are
 * middlewares around the call, listed in HANDLER_STEPS outermost first.
 */
export interface ChainParts {
  config: HandlerConfig;
  logger: RetryLogger;
  flow: QueueFlowControl;
  /** The policy of a routed delivery (its pattern's); absent, every delivery takes the queue's (`config`). */
  policyOf?: PolicyOf;
  /** Observes the attempts a partition's hold retries in place (the pipeline's); absent, they are not told apart. */
  inPlace?: InPlaceAttempts;
}

const policyOf = ({ config, policyOf: routed }: ChainParts): PolicyOf => routed ?? (() => config);

/** The middlewares around the handler call, outermost first; a step that does not apply to the queue answers undefined. */
const HANDLER_STEPS: ReadonlyArray<{ name: string; step: (parts: ChainParts) => Middleware | undefined }> = [
  {
    name: 'ordering',
    step: (p) =>
      p.config.ordering && orderingStep({ ...p.config, ordering: p.config.ordering }, p.logger, policyOf(p), () => p.flow.prefetch, p.inPlace),
  },
  { name: 'idempotency', step: ({ config, logger }) => config.idempotency && idempotencyStep(scopeOf(config), config.idempotency, logger) },
  { name: 'inbox', step: ({ config, logger }) => config.inbox && inboxStep(scopeOf(config), config.inbox, logger) },
  { name: 'breaker', step: (p) => p.flow.breakerStep(policyOf(p)) },
  { name: 'hand-over', step: ({ flow }) => flow.handOverStep() },
  { name: 'time limit', step: (p) => timeLimitStep(p.config.queue, policyOf(p), p.policyOf ? undefined : (p.config.timeoutMs ?? 0)) },
];

/**
 * A partition's copies are recognised under the handler's queue, not the partition's: a message that moves to
 * another partition (a change of count, a partition deleted and declared again) is still the same message.
 */
const scopeOf = (config: HandlerConfig): string => config.partitionOf?.queue ?? config.queue;

/** The names of the steps around the call that apply to a queue, outermost first (for tests). */
export const handlerStepNames = (parts: ChainParts): string[] => HANDLER_STEPS.filter(({ step }) => step(parts)).map(({ name }) => name);

/**
 * `call` with the steps that apply around it, in HANDLER_STEPS's order. The steps see the call end once its answer is
 * read (answerOf); with none, `call` is the chain, and the pipeline reads an unread answer.
 */
export function handlerChain(parts: ChainParts, call: HandlerInvoker): HandlerInvoker {
  const steps = HANDLER_STEPS.map(({ step }) => step(parts)).filter((step): step is Middleware => step !== undefined);
  if (steps.length === 0) return call;
  let invoke: HandlerInvoker = answersUnread(call) ? (payload, context) => call(payload, context).then(answerOf) : call;
  for (let i = steps.length - 1; i >= 0; i--) invoke = steps[i](invoke);
  return invoke;
}

/**
 * What a handler queue's deliveries go through: the handler (or the routes) and the outcome steps, as the pipeline takes
 * them, and the queue's flow control, which supplies the rest of the pipeline's parts.
 */
export interface DeliveryChainParts extends Omit<DeliveryPipelineParts, 'returns' | 'handOver' | 'answered' | 'inPlace'> {
  flow: QueueFlowControl;
}

/** The delivery handler of a handler queue: the gate, then decide, route, the handler chain and the outcome. */
export function deliveryChain(parts: DeliveryChainParts): DeliveryHandler {
  const { config, logger, flow, router } = parts;
  const inPlace = config.retryInPlace ? new InPlaceAttempts() : undefined;
  const routed = router && routedChain({ config, logger, flow, inPlace }, router);
  const invoke = routed ? routed.invoke : handlerChain({ config, logger, flow, inPlace }, parts.invoke);
  const pipeline = new DeliveryPipeline({
    ...parts,
    invoke,
    router: routed?.router,
    returns: flow.returns,
    handOver: flow.handOver(),
    answered: flow.answeredCounter(),
    inPlace,
  });
  return flow.gate(pipeline.handle);
}

/**
 * The chain of a routed queue (the transport's patterns): one chain for the queue (its idempotency keys and ordering
 * sequences are the queue's) whose call is each delivery's own route, and whose policy is the route's. Requests
 * ('once') and parks pass through untouched.
 */
export function routedChain(parts: Omit<ChainParts, 'policyOf'>, router: DeliveryRouter): { router: DeliveryRouter; invoke: HandlerInvoker } {
  const routes = new WeakMap<object, Extract<DeliveryRoute, { kind: 'handle' }>>();
  const routedPolicy = (context: Parameters<PolicyOf>[0]): RetryPolicy => routes.get(context.message)?.policy ?? parts.config;
  const call: HandlerInvoker = (payload, context) => {
    const route = routes.get(context.message);
    return route ? route.invoke(payload, context) : Promise.reject(new Error('no route recorded for this delivery'));
  };
  const invoke = handlerChain({ ...parts, policyOf: routedPolicy }, call);
  return {
    invoke,
    router: (payload, message, deaths) => {
      const chosen = router(payload, message, deaths);
      if (chosen.kind === 'handle') routes.set(message, chosen);
      return chosen;
    },
  };
}
