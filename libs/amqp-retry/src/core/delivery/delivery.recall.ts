/** The abort reason of a delivery taken back (paused, circuit opened) while it waited for its handler: the waiting steps do not settle it. */
export class DeliveryRecalled extends Error {
  constructor(queue: string, why: string) {
    super(`"${queue}": the delivery went back to the broker before its handler was called (${why})`);
    this.name = 'DeliveryRecalled';
  }
}

/** Whether `signal` aborted because its delivery was taken back (see DeliveryRecalled). */
export const isRecalled = (signal: AbortSignal): boolean => signal.aborted && signal.reason instanceof DeliveryRecalled;
