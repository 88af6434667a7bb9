import type { Observable, Subscription } from 'rxjs';
import { startTimer } from '../core/time/duration.timer.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { truncateUtf8 } from '../core/parking/parked-message.headers.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { replyRoute, type ReplyAddressState } from '../core/publish/reply-address.rules.js';
import type { RetryEngine } from '../engine/retry.engine.js';
import { ANSWERED, type RequestOutcome } from '../pipeline/delivery.contracts.js';
import type { InboundPacket, ReplyPacket } from './rpc.packet.js';

type Request = Extract<InboundPacket, { kind: 'request' }>;

/** Sends one reply of a request. */
type Reply = (content: Buffer) => Promise<void>;

/** Nest's text for a request no handler takes, so that its clients see what they would see from ServerRMQ. */
const NO_MESSAGE_HANDLER = 'There is no matching message handler defined in the remote service.';

/** Most bytes of a request's pattern in a log line (the sender chose it, so it may be of any size). */
const MAX_LOGGED_PATTERN_BYTES = 255;

/** A request's pattern as its log lines show it: cut as a park's line cuts what the sender chose. */
const shownPattern = (request: Request): string => truncateUtf8(request.pattern, MAX_LOGGED_PATTERN_BYTES);

/** An error as the caller can read it in JSON: an Error's own fields would serialize as {}. */
function wireError(error: unknown): unknown {
  if (error instanceof Error) return { status: 'error', message: error.message, name: error.name };
  return error ?? { status: 'error', message: 'unknown error' };
}

/**
 * Answers requests as Nest's RMQ transport does: one reply per value of the handler's stream, then one that ends it
 * (`isDisposed`), or one with the error, in order. A reply that cannot be delivered (the caller is gone, or its
 * address is forged) is dropped, with one warning per request: requests are not retried.
 */
export class RequestReplies {
  constructor(
    private readonly engine: RetryEngine,
    private readonly logger: RetryLogger,
    /** How long a request may take before its caller gets a timeout error and the request is acked. */
    private readonly timeoutMs: number,
  ) {}

  /**
   * Runs the handler's stream to its end, or to `timeoutMs`: a handler that never answers would otherwise hold its
   * delivery and a prefetch slot for good. `signal` (the delivery's) ends the wait without an answer: the server
   * abandoned the request at shutdown, and its timer must not keep the process alive. Answered when the handler's
   * stream completed without an error within the time (the breaker counts it as a success); else the failure.
   */
  async answer(request: Request, produce: (signal: AbortSignal) => Promise<Observable<unknown>>, signal?: AbortSignal): Promise<RequestOutcome> {
    const reply = this.replyTo(request);
    const sent: Array<Promise<void>> = [];
    // The handler's own signal: the delivery's, and aborted too at the timeout, so that a handler past it can stop.
    const call = new AbortController();
    const outcome = await new Promise<RequestOutcome>((resolve) => {
      let ended = false;
      let subscription: Subscription | undefined;
      // Ends the request with its outcome: `reason` aborts the handler's signal.
      const stop = (result: RequestOutcome, reason?: Error) => {
        ended = true;
        timer.cancel();
        signal?.removeEventListener('abort', abandon);
        subscription?.unsubscribe();
        if (reason) call.abort(reason);
        resolve(result);
      };
      // The last reply, unless the request ended already.
      const end = (content: Buffer, result: RequestOutcome, reason?: Error) => {
        if (ended) return;
        stop(result, reason);
        sent.push(reply(content));
      };
      const fail = (error: unknown) => end(this.encode(request, { err: wireError(error), isDisposed: true }).bytes, { answered: false, error });
      const abandon = () => {
        if (ended) return;
        const reason = signal?.reason instanceof Error ? signal.reason : new Error('the request was abandoned');
        stop({ answered: false, error: reason }, reason);
      };
      signal?.addEventListener('abort', abandon, { once: true });
      const timer = startTimer(this.timeoutMs, () => {
        const message = `no answer to "${shownPattern(request)}" within ${this.timeoutMs} ms (RetryServer option requestTimeout)`;
        this.logger.warn(`${message}; the caller gets an error, the request is acked and the handler's signal aborts`);
        const error = new Error(message);
        end(this.encode(request, { err: { status: 'error', message }, isDisposed: true }).bytes, { answered: false, error }, error);
      });
      if (signal?.aborted) return abandon();
      produce(call.signal).then((stream) => {
        if (ended) return;
        // Each value of the handler's stream is replied; its end or error ends the request.
        subscription = stream.subscribe({
          next: (response) => {
            if (ended) return;
            const content = this.encode(request, { response });
            // A value JSON cannot write ends the stream with an error: a reply left out would read as "no value".
            if (content.failure) end(content.bytes, { answered: false, error: content.failure });
            else sent.push(reply(content.bytes));
          },
          error: fail,
          complete: () => end(this.encode(request, { isDisposed: true }).bytes, ANSWERED),
        });
        if (ended) subscription.unsubscribe(); // it ended while subscribing (a synchronous stream)
      }, fail);
    });
    await Promise.all(sent);
    return outcome;
  }

  noHandler(request: Request): Promise<void> {
    return this.replyTo(request)(this.encode(request, { err: NO_MESSAGE_HANDLER, isDisposed: true }).bytes);
  }

  /** The reply as JSON; a reply JSON cannot write (a BigInt, a cycle) becomes an error reply that says so. */
  private encode(request: Request, reply: ReplyPacket): { bytes: Buffer; failure?: Error } {
    try {
      return { bytes: Buffer.from(JSON.stringify({ ...reply, id: request.id })) };
    } catch (error) {
      const err = { status: 'error', message: `the reply to "${shownPattern(request)}" cannot be written as JSON: ${errorMessage(error)}` };
      return { bytes: Buffer.from(JSON.stringify({ err, isDisposed: true, id: request.id })), failure: new Error(err.message) };
    }
  }

  /**
   * The replies of one request: a direct reply-to address is checked once, before the first reply (so a caller that
   * closes on receiving its answer is never taken for gone), and replied to only if it exists; an ordinary queue gets
   * `mandatory` replies. One warning at most per request.
   */
  private replyTo(request: Request): Reply {
    const route = replyRoute(request.replyTo);
    let reachable: Promise<ReplyAddressState> | undefined;
    let warned = false;
    const warn = (why: string) => {
      if (warned) return;
      warned = true;
      this.logger.warn(`Could not reply to "${shownPattern(request)}" at "${request.replyTo}": ${why}; the request is acked, not retried`);
    };
    return async (content) => {
      if (route.probe) {
        reachable ??= this.engine.replyAddressState(request.replyTo);
        const state = await reachable;
        if (state.kind === 'gone') return warn('the caller is gone (its reply address no longer exists), so its reply is dropped');
        if (state.kind !== 'exists') return warn(`${state.reason}, so its reply is dropped`);
      }
      const properties = { correlationId: request.correlationId, contentType: 'application/json', persistent: false, mandatory: route.mandatory };
      try {
        await this.engine.publish('', request.replyTo, content, properties);
      } catch (error) {
        warn(`${errorMessage(error)} (the caller may be gone)`);
      }
    };
  }
}
