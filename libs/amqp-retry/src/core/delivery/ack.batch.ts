/** The acks to send for the deliveries handled since the last flush. */
export interface AckFlush {
  /** Ack every outstanding delivery up to this tag with one frame (`multiple`). */
  multipleUpTo?: number;
  /** Tags to ack one by one: handled, but behind a delivery that is still in flight. */
  singles: number[];
  /** Deliveries still outstanding afterwards, in delivery order. */
  remaining: number[];
}

/**
 * Plans the acks of one flush. `outstanding` holds a channel's unsettled delivery tags in delivery order, `ready` those
 * whose handlers succeeded. The run of ready tags at the front gets one `multiple` ack; ready tags behind a delivery
 * still in flight are acked singly, so that a slow handler never holds back other acks (and the prefetch window).
 */
export function planAckFlush(outstanding: readonly number[], ready: ReadonlySet<number>): AckFlush {
  // One pass, no intermediate arrays: it runs once per event-loop turn of a busy consumer.
  let run = 0;
  while (run < outstanding.length && ready.has(outstanding[run])) run++;
  const singles: number[] = run === 1 ? [outstanding[0]] : [];
  const remaining: number[] = [];
  for (let i = run; i < outstanding.length; i++) (ready.has(outstanding[i]) ? singles : remaining).push(outstanding[i]);
  return { multipleUpTo: run > 1 ? outstanding[run - 1] : undefined, singles, remaining };
}
