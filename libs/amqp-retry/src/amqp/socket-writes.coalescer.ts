import type { Writable } from 'node:stream';
import { internalProperty } from './amqplib.internals.js';

/** A stream that can hold its writes back and hand them on in one go (a net.Socket). */
type CorkableStream = Pick<Writable, 'cork' | 'uncork' | 'write' | 'writableLength' | 'writableHighWaterMark'>;

/**
 * The part of amqplib's frame multiplexer (lib/mux.js, 0.10 to 2.x) this relies on: `_readIncoming` writes every
 * queued frame to `out`, the socket, one `write` each. Not public API, so checked before use.
 */
interface FrameMux {
  out: CorkableStream;
  _readIncoming(): void;
}

/** The marker of a multiplexer whose passes are corked already (a second call changes nothing). */
const COALESCED = Symbol('nestjs-amqp-retry.coalesced-writes');

/**
 * One socket write per pass of amqplib's frame multiplexer instead of one per frame.
 *
 * On a fast link each of amqplib's per-frame writes is a system call of its own: 40-50% of a publishing process's CPU
 * (docs/performance.md, "Socket writes"). Corked for that one synchronous pass, the socket hands the frames to the
 * kernel in one `writev`: the same bytes, in order, sent when the pass ends or a batch reaches `writableHighWaterMark`.
 * Back-pressure stays amqplib's: a write says "full" only when the kernel did not take the batch.
 *
 * Returns false, and changes nothing, when `model` has no such multiplexer (an amqplib whose internals differ): frames
 * then go out one write each; slower, never wrong.
 */
export function coalesceSocketWrites(model: unknown): boolean {
  const mux = frameMuxOf(model);
  if (!mux) return false;
  if ((mux as unknown as Record<symbol, unknown>)[COALESCED]) return true;
  const pass = mux._readIncoming;
  const out = mux.out;
  // An own property of this one multiplexer: amqplib's prototype stays as it is.
  mux._readIncoming = function corkedPass(this: FrameMux): void {
    const ownWrite = Object.prototype.hasOwnProperty.call(out, 'write') ? out.write : undefined;
    const write = out.write as (...args: unknown[]) => boolean;
    out.cork();
    // A corked socket says "full" at its high-water mark before the kernel saw anything, and amqplib would reorder its
    // channels on that (a CloseOk could follow the Open that reuses its number): the batch goes to the kernel at once.
    out.write = function batchedWrite(chunk: unknown, ...rest: unknown[]): boolean {
      if (write.call(out, chunk, ...rest)) return true;
      out.uncork();
      out.cork();
      return out.writableLength < out.writableHighWaterMark;
    };
    try {
      pass.call(this);
    } finally {
      if (ownWrite) out.write = ownWrite;
      else delete (out as Partial<CorkableStream>).write;
      out.uncork();
    }
  };
  Object.defineProperty(mux, COALESCED, { value: true });
  return true;
}

/** The frame multiplexer of an amqplib ChannelModel (`model.connection.muxer`), if it has the expected shape. */
function frameMuxOf(model: unknown): FrameMux | undefined {
  const connection = internalProperty(model, 'connection');
  const mux = internalProperty(connection, 'muxer');
  const out = internalProperty(mux, 'out');
  if (typeof internalProperty(mux, '_readIncoming') !== 'function') return undefined;
  if (typeof internalProperty(out, 'cork') !== 'function' || typeof internalProperty(out, 'uncork') !== 'function') return undefined;
  return mux as FrameMux;
}
