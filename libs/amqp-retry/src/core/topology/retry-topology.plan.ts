import { createHash } from 'node:crypto';
import { QUORUM_DELIVERY_LIMIT } from '../delivery/delivery.decision.js';
import { formatDuration } from '../time/duration.reader.js';
import type { HandlerConfig } from '../config/handler.config.js';
import { QUORUM_DEAD_LETTERING, queueTypeArgument } from './queue-type.mismatch.js';
import type { BindingDeclaration, TopologyPlan } from './topology.types.js';
import { BrokerHeader, QueueArgument } from '../headers/header.names.js';
import { queueLimitArguments, type QueueLimitsConfig } from '../config/queue-limits.config.js';

/** The names derived from a business queue Q. */
export const retryNames = (queue: string) => ({
  deadLetterExchange: `${queue}.dlx`,
  firstFailureExchange: `${queue}.dlx.first`,
  returnExchange: `${queue}.return`,
  /** Headers exchange behind the first-failure exchange: a death that is no rejection goes to the dead-letter queue. */
  deathSortExchange: `${queue}.dlx.sort`,
  /** Fanout, the sort exchange's alternate: what is not sorted out (a first failure) goes on to tier 1. */
  firstTierExchange: `${queue}.dlx.first-tier`,
  /** Messages that expired in the queue or were pushed out by its length limit: consumed and parked (or dropped). */
  deadLetterQueue: `${queue}.dlx.dead`,
  /** Holds one message: the tier queues the last start applied (see RetryPlanRecord). */
  planQueue: `${queue}.retry.plan`,
  /** Consumed by every running instance whose tiers form the schedule `id`, so that no other start deletes them. */
  presenceQueue: (scheduleId: string) => `${queue}.retry.live.${scheduleId}`,
});

/** A short, stable digest of the delays from a tier to the last, so that its name carries all that defines it. */
const scheduleId = (delaysMs: readonly number[]) => createHash('sha256').update(delaysMs.join(',')).digest('hex').slice(0, 6);

/**
 * The tier queues of a handler, tier 1 first: `Q.retry.<position>.<delay>.<schedule>`. The last part digests the delays
 * from this tier on, on which its arguments depend, so any change of configuration makes new queues, never a 406.
 * @example tierQueues({ queue: 'orders', delaysMs: [1000, 10000] }) // ['orders.retry.1.1s.<id>', 'orders.retry.2.10s.<id>']
 */
export const tierQueues = (handler: Pick<HandlerConfig, 'queue' | 'delaysMs'>): string[] =>
  handler.delaysMs.map((delay, i) => `${handler.queue}.retry.${i + 1}.${formatDuration(delay)}.${scheduleId(handler.delaysMs.slice(i))}`);

/** What follows `<queue>.retry.` in a tier's name: its position (from 1), its delay as formatDuration spells it, its schedule digest. */
const TIER_NAME_TAIL = /^([1-9]\d*)\.\d+(?:ms|s|m|h|d)\.[0-9a-f]{6}$/;

/**
 * The position (from 1) of `name` among the tiers of `queue` when the name is one tierQueues gives `queue` (for some
 * delays), else undefined: a name read from a record on the broker is acted on only when it is one of these.
 * @example tierPositionOf('orders', 'orders.retry.2.10s.a1b2c3') // 2
 */
export function tierPositionOf(queue: string, name: string): number | undefined {
  const prefix = `${queue}.retry.`;
  const tail = name.startsWith(prefix) ? TIER_NAME_TAIL.exec(name.slice(prefix.length)) : null;
  return tail ? Number(tail[1]) : undefined;
}

/**
 * The arguments the library declares a handler's own queue with. Another client that declares the queue (Nest's
 * ClientRMQ does unless `noAssert`) must give the same ones, or the broker refuses it with a 406.
 */
export function businessQueueArguments(
  queue: string,
  queueType: HandlerConfig['queueType'],
  { singleActiveConsumer = false, limits }: { singleActiveConsumer?: boolean; limits?: QueueLimitsConfig } = {},
): Record<string, unknown> {
  const quorum = queueType === 'quorum';
  return {
    ...(singleActiveConsumer ? { [QueueArgument.singleActiveConsumer]: true } : {}),
    ...queueLimitArguments(limits),
    [QueueArgument.deadLetterExchange]: retryNames(queue).deadLetterExchange,
    ...queueTypeArgument(quorum ? 'quorum' : 'classic'),
    ...(quorum ? { ...QUORUM_DEAD_LETTERING, [QueueArgument.deliveryLimit]: QUORUM_DELIVERY_LIMIT } : {}),
  };
}

/** A binding of `destination` to `source`, on `pattern`. */
function bind(source: string, destination: string, destinationType: BindingDeclaration['destinationType'], pattern = ''): BindingDeclaration {
  return { source, destination, destinationType, pattern };
}

/** The deaths in Q that are no rejection by the library, as RabbitMQ names their reasons. */
export const DEATHS_TO_SORT_OUT = ['expired', 'maxlen', 'delivery_limit'] as const;

/**
 * The bindings of Q.dlx.sort to Q.dlx.dead, on the death headers the broker writes: `all-with-x` matches on `x-`
 * headers (plain `all` ignores them); `x-last-death-*` (RabbitMQ 3.13+) also catches a message that died elsewhere first.
 */
function deathSortBindings(queue: string, deadLetterQueue: string): BindingDeclaration[] {
  const on = (which: 'first' | 'last', reason: string): BindingDeclaration => ({
    ...bind(retryNames(queue).deathSortExchange, deadLetterQueue, 'queue'),
    arguments: {
      'x-match': 'all-with-x',
      [which === 'first' ? BrokerHeader.firstDeathQueue : BrokerHeader.lastDeathQueue]: queue,
      [which === 'first' ? BrokerHeader.firstDeathReason : BrokerHeader.lastDeathReason]: reason,
    },
  });
  return DEATHS_TO_SORT_OUT.flatMap((reason) => [on('first', reason), on('last', reason)]);
}

/**
 * The retry topology of one handler (see docs/design.md section 1), with T_k the k-th of tierQueues():
 *
 *   E --key--> Q --nack--> Q.dlx (direct; alternate exchange Q.dlx.first)
 *     Q.dlx.first (fanout) --> Q.dlx.sort (headers; alternate exchange Q.dlx.first-tier)
 *       Q.dlx.sort --a death in Q that is no rejection--> Q.dlx.dead   consumed: parked as expired or maxlen
 *       Q.dlx.first-tier (fanout) --> T_1          first failure: the publisher's key matches no binding of Q.dlx
 *     Q.dlx --T_k--> T_k                          every tier is bound by its own name
 *   T_k (TTL delay_k) --expires, key T_(k+1) (the last tier: its own name)--> Q.return (fanout) --> Q only
 *
 * A failing message carries its next tier's name as its routing key, so a binding can never point it at the wrong
 * tier, and messages in the tiers of old delays finish their old schedule. The one binding that can go stale,
 * Q.dlx.first-tier's, is removed by a later start (planRetirement); `firstFailures: false` leaves it out, for a start
 * that must cut the old one first. Q.dlx.sort keeps expired and pushed-out messages out of the tiers, where the
 * broker's dead-letter cycle rule would drop them on their way back.
 */
export function planRetryTopology(handler: HandlerConfig, { firstFailures = true }: { firstFailures?: boolean } = {}): TopologyPlan {
  const { queue, upstream, exchange } = handler;
  const names = retryNames(queue);
  const tiers = tierQueues(handler);
  const quorum = handler.queueType === 'quorum';
  const typed = queueTypeArgument(quorum ? 'quorum' : 'classic');
  const safeDeadLettering = quorum ? { ...typed, ...QUORUM_DEAD_LETTERING } : typed;

  const exchanges: TopologyPlan['exchanges'] = [
    ...(upstream ? [{ name: upstream.exchange, type: upstream.exchangeType }] : []),
    ...(exchange
      ? [{ name: exchange, type: handler.exchangeType, ...(handler.exchangeArguments ? { arguments: handler.exchangeArguments } : {}) }]
      : []),
    { name: names.firstTierExchange, type: 'fanout' },
    { name: names.deathSortExchange, type: 'headers', arguments: { 'alternate-exchange': names.firstTierExchange } },
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
    { name: handler.deadLetterQueue ?? names.deadLetterQueue, arguments: typed },
  ];
  const bindings: TopologyPlan['bindings'] = [
    ...(upstream && exchange ? upstream.routingKeys.map((pattern) => bind(upstream.exchange, exchange, 'exchange', pattern)) : []),
    ...(exchange ? handler.routingKeys.map((pattern) => bind(exchange, queue, 'queue', pattern)) : []),
    bind(names.returnExchange, queue, 'queue'),
    bind(names.firstFailureExchange, names.deathSortExchange, 'exchange'),
    ...deathSortBindings(queue, handler.deadLetterQueue ?? names.deadLetterQueue),
    ...(firstFailures ? [bind(names.firstTierExchange, tiers[0], 'queue')] : []),
    ...tiers.map((name) => bind(names.deadLetterExchange, name, 'queue', name)),
  ];
  return { exchanges, queues, bindings };
}
