/** A channel's delivery not settled yet, in delivery order: `ready` once its handler succeeded. */
export interface AckEntry {
  readonly ready: boolean;
}

/** The acks to send for the deliveries handled since the last flush. */
export interface AckFlush<T extends AckEntry> {
  /** Ack every outstanding delivery up to this one with one frame (`multiple`). */
  multipleUpTo?: T;
  /** Deliveries to ack one by one: handled, but behind a delivery that is still in flight. */
  singles: T[];
  /** Deliveries still outstanding afterwards, in delivery order. */
  remaining: T[];
}

/**
 * Plans the acks of one flush. `outstanding` holds a channel's unsettled deliveries in delivery order. The run of ready
 * ones at the front gets one `multiple` ack; ready ones behind a delivery still in flight are acked singly, so that a
 * slow handler never holds back other acks (and the prefetch window).
 */
export function planAckFlush<T extends AckEntry>(outstanding: readonly T[]): AckFlush<T> {
  // One pass over flags, no lookups: it runs once per event-loop turn of a busy consumer.
  let run = 0;
  while (run < outstanding.length && outstanding[run].ready) run++;
  const singles: T[] = run === 1 ? [outstanding[0]] : [];
  const remaining: T[] = [];
  for (let i = run; i < outstanding.length; i++) (outstanding[i].ready ? singles : remaining).push(outstanding[i]);
  return { multipleUpTo: run > 1 ? outstanding[run - 1] : undefined, singles, remaining };
}
