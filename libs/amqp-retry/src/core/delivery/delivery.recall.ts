/** The abort reason of a delivery taken back (paused, circuit opened, handed over) while it waited for its handler: the waiting steps do not settle it. */
export class DeliveryRecalled extends Error {
  constructor(queue: string, why: string) {
    super(`"${queue}": the delivery went back to the broker before its handler was called (${why})`);
    this.name = 'DeliveryRecalled';
  }
}

/** Whether `signal` aborted because its delivery was taken back (see DeliveryRecalled). */
export const isRecalled = (signal: AbortSignal): boolean => signal.aborted && signal.reason instanceof DeliveryRecalled;

/** Where a delivery's signal keeps its recall signal (see linkRecall): on the signal itself, nothing shared. */
const RECALL = Symbol('recall');
type Recallable = AbortSignal & { [RECALL]?: AbortSignal };

/**
 * Gives a delivery's signal (aborted when it can no longer be settled) its recall signal: aborted with it, and also
 * with a DeliveryRecalled when the queue is handed over. What waits before a call follows the recall; a call does not.
 */
export function linkRecall(signal: AbortSignal, recall: AbortSignal): void {
  Object.defineProperty(signal, RECALL, { value: recall, writable: true });
}

/** The recall signal linked to a delivery's `signal` (see linkRecall); the signal itself when none is. */
export const recallOf = (signal: AbortSignal): AbortSignal => (signal as Recallable)[RECALL] ?? signal;
