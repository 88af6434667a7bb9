import type { ConsumeMessage } from 'amqplib';
import type { DeliveryHandler, Settle } from '../amqp/queue.consumer.js';
import type { HandlerInvoker } from '../pipeline/delivery.contracts.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import { DeliveryRecalled, isRecalled, linkRecall, recallOf } from '../core/delivery/delivery.recall.js';

interface Waiting {
  settle: Settle;
  recall: AbortController;
  /** Stops following the queue's recall (see run): called once the delivery is handed over. */
  handed: () => void;
}

/** Whether deliveries may wait between admission and handler (ordering, idempotency, inbox): a stop or a hand-over takes those back. */
export const waitsBeforeHandler = (config: HandlerConfig): boolean =>
  config.ordering !== undefined || config.idempotency !== undefined || config.inbox !== undefined;

/** Runs `handle` for the delivery, then `done` however it ended (a synchronous throw too); the outcome is handle's. */
export function handleThen(handle: DeliveryHandler, message: ConsumeMessage, settle: Settle, signal: AbortSignal, done: () => void): Promise<void> {
  let running: Promise<void>;
  try {
    running = handle(message, settle, signal);
  } catch (error) {
    running = Promise.reject(error);
  }
  return Promise.resolve(running).then(done, (error: unknown) => {
    done();
    throw error;
  });
}

/**
 * The deliveries of one queue admitted by its flow whose handler was not called yet. When the queue stops (paused,
 * circuit open) they are taken back: each is given back to the broker in delivery order and its signal aborts with
 * DeliveryRecalled; so they are when the consumer recalls them (a hand-over), left for its closing channel to return.
 * A delivery that reached the handler is no longer recalled (it finishes and settles as usual).
 */
export class WaitingDeliveries {
  private readonly waiting = new Map<ConsumeMessage, Waiting>();

  constructor(private readonly queue: string) {}

  /**
   * Runs `handle` for the delivery with a signal of its own: the channel's, which also aborts when it is recalled, and
   * until it is handed over when its consumer recalls it (recallOf); linked to that recall for the waits after a call.
   */
  run(handle: DeliveryHandler, message: ConsumeMessage, settle: Settle, signal: AbortSignal): Promise<void> {
    const recall = new AbortController();
    const queueRecall = recallOf(signal);
    const follow = () => recall.abort(signal.reason);
    const recalled = () => recall.abort(queueRecall.reason);
    if (signal.aborted) follow();
    else signal.addEventListener('abort', follow, { once: true });
    if (queueRecall.aborted) recalled();
    else if (queueRecall !== signal) queueRecall.addEventListener('abort', recalled, { once: true });
    linkRecall(recall.signal, queueRecall);
    const handed = () => queueRecall.removeEventListener('abort', recalled);
    const entry: Waiting = { settle, recall, handed };
    this.waiting.set(message, entry);
    const done = () => {
      signal.removeEventListener('abort', follow);
      handed();
      if (this.waiting.get(message) === entry) this.waiting.delete(message);
    };
    return handleThen(handle, message, settle, recall.signal, done);
  }

  /** The handler's own invoker: a delivery that reaches it is handed over (no longer recalled); a recalled one is refused. */
  handing(invoke: HandlerInvoker): HandlerInvoker {
    return (payload, context) => (this.handOver(context.message, context.signal) ? invoke(payload, context) : Promise.reject(context.signal.reason));
  }

  /**
   * Hands a delivery over to what settles it without its handler (a park, a move to a tier, a request's run): it is no
   * longer recalled. False when it was recalled already: it is back in the broker, and nothing may settle it here.
   */
  handOver(message: ConsumeMessage, signal: AbortSignal): boolean {
    if (isRecalled(signal)) return false;
    this.waiting.get(message)?.handed();
    this.waiting.delete(message);
    return true;
  }

  /** Takes back every waiting delivery in delivery order, so that a key's messages return in order; `giveBack` false: it stays. */
  recall(why: string, giveBack: (message: ConsumeMessage, settle: Settle) => boolean): void {
    for (const [message, entry] of [...this.waiting]) {
      if (!giveBack(message, entry.settle)) continue;
      this.waiting.delete(message);
      entry.recall.abort(new DeliveryRecalled(this.queue, why));
    }
  }
}
