import { QUORUM_DELIVERY_LIMIT } from './delivery.decision.js';
import type { HandlerConfig } from './handler-config.js';
import type { BindingDeclaration, TopologyPlan } from './topology.types.js';

/** The names derived from a business queue Q. */
export const retryNames = (queue: string) => ({
  deadLetterExchange: `${queue}.dlx`,
  firstFailureExchange: `${queue}.dlx.first`,
  returnExchange: `${queue}.return`,
  tierQueue: (tier: number) => `${queue}.retry.${tier}`,
  afterTierKey: (tier: number) => `${queue}.after.${tier}`,
});

/**
 * The retry topology of one handler (see DESIGN.md section 1):
 *
 *   E --key--> Q --nack--> Q.dlx (direct; alternate exchange Q.dlx.first)
 *     Q.dlx.first (fanout) --> Q.retry.1              first failure: the publisher's key is unknown to Q.dlx
 *     Q.dlx --Q.after.k--> Q.retry.(k+1), Q.after.N --> Q.retry.N (the last tier repeats)
 *   Q.retry.k (TTL delay_k) --expires, key Q.after.k--> Q.return (fanout) --> Q only
 *
 * Tier queues are named by position, not by delay: a tier named by its delay would stay bound to the fanout
 * Q.dlx.first after the delay changed, and every first failure would then wait in two tiers and come back twice.
 * A changed delay therefore surfaces as a TopologyMismatchError on Q.retry.k, whose message says how to proceed.
 */
export function planRetryTopology(handler: HandlerConfig): TopologyPlan {
  const { queue, delaysMs } = handler;
  const names = retryNames(queue);
  const tiers = delaysMs.length;
  const tierBinding = (key: number, tier: number): BindingDeclaration => ({
    source: names.deadLetterExchange,
    destination: names.tierQueue(tier),
    destinationType: 'queue',
    pattern: names.afterTierKey(key),
  });

  // Quorum queues dead-letter at least once (the message leaves only when the target took it), which needs
  // reject-publish overflow; without it the broker may drop a dead letter that the target could not take.
  const quorum = handler.queueType === 'quorum';
  const safeDeadLettering = quorum ? { 'x-queue-type': 'quorum', 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' } : {};
  const exchanges: TopologyPlan['exchanges'] = [
    ...(handler.exchange ? [{ name: handler.exchange, type: handler.exchangeType }] : []),
    { name: names.firstFailureExchange, type: 'fanout' },
    { name: names.deadLetterExchange, type: 'direct', arguments: { 'alternate-exchange': names.firstFailureExchange } },
    { name: names.returnExchange, type: 'fanout' },
  ];
  const queues: TopologyPlan['queues'] = [
    {
      name: queue,
      arguments: {
        'x-dead-letter-exchange': names.deadLetterExchange,
        ...safeDeadLettering,
        ...(quorum ? { 'x-delivery-limit': QUORUM_DELIVERY_LIMIT } : {}),
      },
    },
    ...delaysMs.map((delay, i) => ({
      name: names.tierQueue(i + 1),
      arguments: {
        'x-message-ttl': delay,
        'x-dead-letter-exchange': names.returnExchange,
        'x-dead-letter-routing-key': names.afterTierKey(i + 1),
        ...safeDeadLettering,
      },
    })),
    { name: handler.errorQueue, arguments: quorum ? { 'x-queue-type': 'quorum' } : {} },
  ];
  const bindings: BindingDeclaration[] = [
    ...(handler.exchange
      ? handler.routingKeys.map((pattern) => ({ source: handler.exchange as string, destination: queue, destinationType: 'queue' as const, pattern }))
      : []),
    { source: names.returnExchange, destination: queue, destinationType: 'queue', pattern: '' },
    { source: names.firstFailureExchange, destination: names.tierQueue(1), destinationType: 'queue', pattern: '' },
    ...delaysMs.map((_, i) => (i + 1 < tiers ? tierBinding(i + 1, i + 2) : tierBinding(tiers, tiers))),
  ];
  // A tier that was the last one under an earlier configuration kept its self-loop; with more tiers now it would
  // send the message to both itself and the next tier.
  const unbindings = delaysMs.slice(0, -1).map((_, i) => tierBinding(i + 1, i + 1));
  return { exchanges, queues, bindings, unbindings };
}

/**
 * The bindings that route into tier `tier` of `queue` when it is no longer part of the configuration (there are
 * fewer tiers now). Removing them leaves the old tier to drain: its messages still return to Q when they expire.
 */
export function staleTierUnbindings(queue: string, tier: number): BindingDeclaration[] {
  const names = retryNames(queue);
  return [tier - 1, tier].map((key) => ({
    source: names.deadLetterExchange,
    destination: names.tierQueue(tier),
    destinationType: 'queue' as const,
    pattern: names.afterTierKey(key),
  }));
}
