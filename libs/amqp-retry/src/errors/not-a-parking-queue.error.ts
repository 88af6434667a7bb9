/**
 * A parked-messages call names, as a parking queue, a queue that is not one: a handler queue or a retry tier (by the
 * application's own handlers, or a handler's record, which the reason then names), or a queue with consumers (nothing of the library consumes a parking queue). Nothing was read or
 * changed: a walk would hold a live queue's messages from its consumers, and a purge or a replay would take them.
 */
export class NotAParkingQueueError extends Error {
  constructor(
    /** The queue named. */
    readonly queue: string,
    /** Why it is not a parking queue, in words. */
    readonly reason: string,
  ) {
    super(
      `${JSON.stringify(queue)} is ${reason}, not a parking queue; nothing was read or changed. Name the handler queue (queue, --queue) or its parking queue ("<queue>.error" unless its errorQueue says otherwise)`,
    );
    this.name = 'NotAParkingQueueError';
  }
}
