/**
 * Poison isolation on a quorum queue, which counts every delivery unsettled at a crash: a suspect (one that may have
 * crashed a process) runs alone at prefetch 1 until a delivery that is not suspect shows the redeliveries are through,
 * so that only the poison message nears the redelivery limit.
 */

/**
 * The pace a delivery asks for: `true` careful (a suspect at full pace), `false` full (no suspect, delivered by the
 * careful consumer: `deliveredCarefully`), `undefined` no change.
 * @example paceAfterDelivery(true, false, false) // true: go careful
 */
export function paceAfterDelivery(suspect: boolean, careful: boolean, deliveredCarefully: boolean): boolean | undefined {
  if (suspect) return careful ? undefined : true;
  return careful && deliveredCarefully ? false : undefined;
}

/**
 * The prefetch to subscribe with: 1 while careful, else the pace set by release(), else the configured one.
 * @example consumerPrefetch(false, undefined, 20) // 20
 */
export function consumerPrefetch(careful: boolean, pace: number | undefined, configured: number): number {
  return careful ? 1 : (pace ?? configured);
}
