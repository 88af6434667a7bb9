/**
 * Poison isolation on a quorum queue. A quorum queue counts every delivery that was not settled when a process
 * crashed, so when a poison message crashes the process, everything unsettled beside it is counted too. A suspect (a
 * delivery that may have crashed a process before) therefore runs alone, and the consumer goes careful: prefetch 1,
 * until a delivery that is not suspect, delivered while careful, shows the redeliveries are through (the queue hands
 * back returned messages first). A poison message then crashes with nothing beside it, and only it nears the
 * redelivery limit.
 */

/**
 * The pace a delivery asks for: `true` careful (a suspect came while at full pace), `false` full (a delivery that is
 * not suspect came from a careful consumer: the suspects are through), `undefined` no change. `deliveredCarefully`:
 * the consumer that delivered it was subscribed careful (a delivery of an earlier, full-pace consumer proves nothing).
 * @example paceAfterDelivery(true, false, false) // true: go careful
 */
export function paceAfterDelivery(suspect: boolean, careful: boolean, deliveredCarefully: boolean): boolean | undefined {
  if (suspect) return careful ? undefined : true;
  return careful && deliveredCarefully ? false : undefined;
}

/**
 * The prefetch to subscribe with: 1 while careful, else the pace set by release() (a circuit's trial calls), else the
 * configured one.
 * @example consumerPrefetch(false, undefined, 20) // 20
 */
export function consumerPrefetch(careful: boolean, pace: number | undefined, configured: number): number {
  return careful ? 1 : (pace ?? configured);
}
