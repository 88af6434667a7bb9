/**
 * The abort reason of a delivery its queue took back before its handler was called: the queue was paused or its
 * circuit opened while the delivery waited (for its ordering key's turn, for another copy's idempotency claim). The
 * delivery is already back in the broker (nack with requeue); the steps that waited give up without settling it.
 */
export class DeliveryRecalled extends Error {
  constructor(queue: string, why: string) {
    super(`"${queue}": the delivery went back to the broker before its handler was called (${why})`);
    this.name = 'DeliveryRecalled';
  }
}

/** Whether `signal` aborted because its delivery was taken back (see DeliveryRecalled). */
export const isRecalled = (signal: AbortSignal): boolean => signal.aborted && signal.reason instanceof DeliveryRecalled;
