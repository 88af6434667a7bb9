import { internalProperty } from './amqplib.internals.js';

/** A stream that can hold its writes back and hand them on in one go (a net.Socket). */
interface CorkableStream {
  cork(): void;
  uncork(): void;
  write(chunk: unknown, ...rest: unknown[]): boolean;
  readonly writableLength: number;
  readonly writableHighWaterMark: number;
}

/**
 * The part of amqplib's frame multiplexer (lib/mux.js, amqplib 0.10 to 2.x) this relies on: `out`, the socket, and
 * `_readIncoming`, the synchronous pass that writes every frame the channels have queued, one `out.write` each. It is
 * not public API, so it is checked before use.
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
 * amqplib queues each channel's frames and, on a setImmediate, writes them to the socket one `write` each. On
 * loopback or any fast link each such write completes at once, so each is a system call of its own: a publish, an ack,
 * a nack. Profiles of a publishing process put 40-50% of its CPU there (docs/performance.md, "Socket writes").
 * Corked for the length of that one synchronous pass, the socket hands the frames to the kernel in one `writev`: the
 * same bytes, in the same order, sent when the pass ends or when a batch reaches the socket's `writableHighWaterMark`
 * (16 KiB on Node 20, 64 KiB from 22), whichever comes first (a pass takes microseconds; a frame written straight to
 * the socket outside a pass, a heartbeat or a connection-level method, is not held at all). Back-pressure is
 * amqplib's own: a write says "full" only when the kernel did not take the batch, and the multiplexer goes on at 'drain'.
 * Over TLS the gain is smaller: a TLS socket's writes complete asynchronously, so Node batched them already.
 *
 * Returns false, and changes nothing, when `model` has no such multiplexer (an amqplib whose internals differ): its
 * frames then go out one write each, as amqplib sends them; slower, never wrong.
 */
export function coalesceSocketWrites(model: unknown): boolean {
  const mux = frameMuxOf(model);
  if (!mux) return false;
  if ((mux as unknown as Record<symbol, unknown>)[COALESCED]) return true;
  const pass = mux._readIncoming;
  const out = mux.out;
  // An own property of this one multiplexer: amqplib's prototype, and every other connection, stay as they are.
  mux._readIncoming = function corkedPass(this: FrameMux): void {
    const ownWrite = Object.prototype.hasOwnProperty.call(out, 'write') ? out.write : undefined;
    const write = out.write;
    out.cork();
    // A corked socket says "full" at its high-water mark although nothing was offered to the kernel yet. amqplib
    // takes "full" to mean the kernel's buffer is, and moves the channels still waiting behind the others, so a
    // closing channel's CloseOk could follow the Open of the channel that reuses its number (the broker then ignores
    // that Open). So the batch goes to the kernel there and then, and "full" is said only if the kernel left some.
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
