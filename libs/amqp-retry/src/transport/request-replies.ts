import type { Observable } from 'rxjs';
import { errorMessage } from '../core/error-message.js';
import type { RetryLogger } from '../core/retry-logger.js';
import type { RetryEngine } from '../engine/retry.engine.js';
import type { InboundPacket } from './rpc-packet.js';

type Request = Extract<InboundPacket, { kind: 'request' }>;

/** What Nest's ClientRMQ reads from a reply: a value, an error, and the end of the stream. */
interface ReplyPacket {
  response?: unknown;
  err?: unknown;
  isDisposed?: boolean;
}

/** Nest's text for a request no handler takes, so that its clients see what they would see from ServerRMQ. */
const NO_MESSAGE_HANDLER = 'There is no matching message handler defined in the remote service.';

/** An error as the caller can read it in JSON: an Error's own fields would serialize as {}. */
function wireError(error: unknown): unknown {
  if (error instanceof Error) return { status: 'error', message: error.message, name: error.name };
  return error ?? { status: 'error', message: 'unknown error' };
}

/**
 * Answers requests as Nest's RMQ transport does: one reply per value of the handler's stream, then one that ends it
 * (`isDisposed`), or one with the error; each to the request's `replyTo` with its `correlationId`, in order. A reply
 * that cannot be delivered (the caller is gone) is logged and dropped: requests are not retried.
 */
export class RequestReplies {
  constructor(
    private readonly engine: RetryEngine,
    private readonly logger: RetryLogger,
  ) {}

  async answer(request: Request, produce: () => Promise<Observable<unknown>>): Promise<void> {
    let stream: Observable<unknown>;
    try {
      stream = await produce();
    } catch (error) {
      return this.send(request, { err: wireError(error), isDisposed: true });
    }
    const sent: Array<Promise<void>> = [];
    await new Promise<void>((resolve) => {
      stream.subscribe({
        next: (response) => void sent.push(this.send(request, { response })),
        error: (error: unknown) => {
          sent.push(this.send(request, { err: wireError(error), isDisposed: true }));
          resolve();
        },
        complete: () => {
          sent.push(this.send(request, { isDisposed: true }));
          resolve();
        },
      });
    });
    await Promise.all(sent);
  }

  noHandler(request: Request): Promise<void> {
    return this.send(request, { err: NO_MESSAGE_HANDLER, isDisposed: true });
  }

  private async send(request: Request, reply: ReplyPacket): Promise<void> {
    const content = Buffer.from(JSON.stringify({ ...reply, id: request.id }));
    try {
      await this.engine.publish('', request.replyTo, content, {
        correlationId: request.correlationId,
        contentType: 'application/json',
        persistent: false,
      });
    } catch (error) {
      this.logger.warn(`Could not reply to "${request.pattern}" at "${request.replyTo}" (the caller may be gone): ${errorMessage(error)}`);
    }
  }
}
