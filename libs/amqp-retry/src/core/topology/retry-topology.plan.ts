import { createHash } from 'node:crypto';
import { QUORUM_DELIVERY_LIMIT } from '../delivery/delivery.decision.js';
import { formatDuration } from '../time/duration.reader.js';
import type { HandlerConfig } from '../config/handler.config.js';
import { queueTypeArgument } from './queue-type.mismatch.js';
import type { TopologyPlan } from './topology.types.js';
import { QueueArgument } from '../headers/header.names.js';

/** The names derived from a business queue Q. */
export const retryNames = (queue: string) => ({
  deadLetterExchange: `${queue}.dlx`,
  firstFailureExchange: `${queue}.dlx.first`,
  returnExchange: `${queue}.return`,
  /** Holds one message: the tier queues the last start applied (see RetryPlanRecord). */
  planQueue: `${queue}.retry.plan`,
  /** Consumed by every running instance whose tiers form the schedule `id`, so that no other start deletes them. */
  presenceQueue: (scheduleId: string) => `${queue}.retry.live.${scheduleId}`,
});

/** A short, stable digest of the delays from a tier to the last, so that its name carries all that defines it. */
const scheduleId = (delaysMs: readonly number[]) => createHash('sha256').update(delaysMs.join(',')).digest('hex').slice(0, 6);

/**
 * The tier queues of a handler, tier 1 first: `Q.retry.<position>.<delay>.<schedule>`. A tier's arguments are its
 * delay and the name of the next tier, which depends on every later delay; the name carries all of them (the last
 * part digests the delays from this tier on), so any change of configuration makes new queues, never a 406.
 * @example tierQueues({ queue: 'orders', delaysMs: [1000, 10000] }) // ['orders.retry.1.1s.<id>', 'orders.retry.2.10s.<id>']
 */
export const tierQueues = (handler: Pick<HandlerConfig, 'queue' | 'delaysMs'>): string[] =>
  handler.delaysMs.map((delay, i) => `${handler.queue}.retry.${i + 1}.${formatDuration(delay)}.${scheduleId(handler.delaysMs.slice(i))}`);

/**
 * The arguments the library declares a handler's own queue with. Another client that declares the queue (Nest's
 * ClientRMQ does unless `noAssert`) must give the same ones, or the broker refuses it with a 406.
 */
export function businessQueueArguments(
  queue: string,
  queueType: HandlerConfig['queueType'],
  { singleActiveConsumer = false }: { singleActiveConsumer?: boolean } = {},
): Record<string, unknown> {
  const quorum = queueType === 'quorum';
  return {
    ...(singleActiveConsumer ? { [QueueArgument.singleActiveConsumer]: true } : {}),
    [QueueArgument.deadLetterExchange]: retryNames(queue).deadLetterExchange,
    ...queueTypeArgument(quorum ? 'quorum' : 'classic'),
    ...(quorum ? { [QueueArgument.deadLetterStrategy]: 'at-least-once', [QueueArgument.overflow]: 'reject-publish' } : {}),
    ...(quorum ? { [QueueArgument.deliveryLimit]: QUORUM_DELIVERY_LIMIT } : {}),
  };
}

/**
 * The retry topology of one handler (see docs/design.md section 1), with T_k the k-th of tierQueues():
 *
 *   E --key--> Q --nack--> Q.dlx (direct; alternate exchange Q.dlx.first)
 *     Q.dlx.first (fanout) --> T_1               first failure: the publisher's key matches no binding of Q.dlx
 *     Q.dlx --T_k--> T_k                          every tier is bound by its own name
 *   T_k (TTL delay_k) --expires, key T_(k+1) (the last tier: its own name)--> Q.return (fanout) --> Q only
 *
 * So a failing message carries the name of its next tier as its routing key, and Q.dlx routes by names alone: a
 * binding can never point a message at the wrong tier, whatever configurations came before. Changing delays
 * creates new tiers; messages waiting in the old ones finish the old schedule (their keys name old tiers, which
 * keep their bindings). The one binding that can go stale is Q.dlx.first's to the old first tier, which the plan
 * record lets a later start remove (planRetirement). `firstFailures: false` leaves that binding out, for a start that
 * must cut the old one first (two first tiers bound at once would each get a copy of a first failure).
 */
export function planRetryTopology(handler: HandlerConfig, { firstFailures = true }: { firstFailures?: boolean } = {}): TopologyPlan {
  const { queue } = handler;
  const names = retryNames(queue);
  const tiers = tierQueues(handler);
  // Quorum queues dead-letter at least once (the message leaves only when the target took it), which needs
  // reject-publish overflow; without it the broker may drop a dead letter that the target could not take.
  // Every queue states its type (see queueTypeArgument): a vhost's default type must not decide it.
  const quorum = handler.queueType === 'quorum';
  const typed = queueTypeArgument(quorum ? 'quorum' : 'classic');
  const safeDeadLettering = quorum
    ? { ...typed, [QueueArgument.deadLetterStrategy]: 'at-least-once', [QueueArgument.overflow]: 'reject-publish' }
    : typed;

  const exchanges: TopologyPlan['exchanges'] = [
    ...(handler.upstream ? [{ name: handler.upstream.exchange, type: handler.upstream.exchangeType }] : []),
    ...(handler.exchange
      ? [{ name: handler.exchange, type: handler.exchangeType, ...(handler.exchangeArguments ? { arguments: handler.exchangeArguments } : {}) }]
      : []),
    { name: names.firstFailureExchange, type: 'fanout' },
    { name: names.deadLetterExchange, type: 'direct', arguments: { 'alternate-exchange': names.firstFailureExchange } },
    { name: names.returnExchange, type: 'fanout' },
  ];
  const queues: TopologyPlan['queues'] = [
    { name: queue, arguments: businessQueueArguments(queue, handler.queueType, handler) },
    ...tiers.map((name, i) => ({
      name,
      arguments: {
        [QueueArgument.messageTtl]: handler.delaysMs[i],
        [QueueArgument.deadLetterExchange]: names.returnExchange,
        [QueueArgument.deadLetterRoutingKey]: tiers[Math.min(i + 1, tiers.length - 1)], // the last tier repeats
        ...safeDeadLettering,
      },
    })),
    { name: handler.errorQueue, arguments: typed },
    { name: names.planQueue, arguments: typed },
  ];
  const { upstream } = handler;
  const bindings: TopologyPlan['bindings'] = [
    ...(upstream && handler.exchange
      ? upstream.routingKeys.map((pattern) => ({
          source: upstream.exchange,
          destination: handler.exchange as string,
          destinationType: 'exchange' as const,
          pattern,
        }))
      : []),
    ...(handler.exchange
      ? handler.routingKeys.map((pattern) => ({ source: handler.exchange as string, destination: queue, destinationType: 'queue' as const, pattern }))
      : []),
    { source: names.returnExchange, destination: queue, destinationType: 'queue', pattern: '' },
    ...(firstFailures ? [{ source: names.firstFailureExchange, destination: tiers[0], destinationType: 'queue' as const, pattern: '' }] : []),
    ...tiers.map((name) => ({ source: names.deadLetterExchange, destination: name, destinationType: 'queue' as const, pattern: name })),
  ];
  return { exchanges, queues, bindings };
}
