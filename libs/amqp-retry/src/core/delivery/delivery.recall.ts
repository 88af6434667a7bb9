/**
 * The abort reason of a delivery its queue took back (nack with requeue: paused, or circuit opened) while it waited
 * before its handler; the steps that waited give up without settling it.
 */
export class DeliveryRecalled extends Error {
  constructor(queue: string, why: string) {
    super(`"${queue}": the delivery went back to the broker before its handler was called (${why})`);
    this.name = 'DeliveryRecalled';
  }
}

/** Whether `signal` aborted because its delivery was taken back (see DeliveryRecalled). */
export const isRecalled = (signal: AbortSignal): boolean => signal.aborted && signal.reason instanceof DeliveryRecalled;
