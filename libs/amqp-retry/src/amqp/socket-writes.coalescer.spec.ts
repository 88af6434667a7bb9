import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { coalesceSocketWrites } from './socket-writes.coalescer.js';

// amqplib's own multiplexer, for the tests that must hold for the amqplib installed (not an exported subpath).
const require = createRequire(import.meta.url);
interface RealMux {
  pipeFrom(readable: PassThrough): void;
  blocked: boolean;
  oldStreams: unknown[];
  _readIncoming(): void;
}
const { Mux } = require(join(dirname(require.resolve('amqplib')), 'lib', 'mux.js')) as { Mux: new (out: Writable) => RealMux };

/** A socket stand-in: records each system-call-like write (one `_write` or one `_writev`) and its chunks. */
class RecordingSocket extends Writable {
  readonly calls: string[][] = [];
  /** `later`: each write completes on a later turn, as a socket whose kernel buffer is full (or a TLS socket). */
  constructor(
    highWaterMark = 16 * 1024,
    private readonly later = false,
  ) {
    super({ highWaterMark });
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.calls.push([chunk.toString()]);
    this.complete(done);
  }
  override _writev(chunks: Array<{ chunk: Buffer }>, done: (error?: Error | null) => void): void {
    this.calls.push(chunks.map(({ chunk }) => chunk.toString()));
    this.complete(done);
  }
  private complete(done: () => void): void {
    if (this.later) setImmediate(done);
    else done();
  }
}

/** amqplib's multiplexer as far as the coalescer sees it: a pass that writes queued frames until `out` says full. */
class FakeMux {
  blocked = false;
  passes = 0;
  constructor(
    readonly out: RecordingSocket,
    readonly queued: string[],
  ) {
    out.on('drain', () => {
      this.blocked = false;
      this._readIncoming();
    });
  }
  _readIncoming(): void {
    this.passes++;
    let accepting = true;
    while (accepting && this.queued.length > 0) accepting = this.out.write(this.queued.shift() as string);
    this.blocked = !accepting;
  }
}

const modelWith = (mux: unknown) => ({ connection: { muxer: mux } });
const frames = (count: number, size = 1) => Array.from({ length: count }, (_, n) => String(n).padStart(size, '0'));
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('coalesceSocketWrites', () => {
  it('hands every frame of one pass to the socket in one write, in order', () => {
    const socket = new RecordingSocket();
    const mux = new FakeMux(socket, frames(300));
    expect(coalesceSocketWrites(modelWith(mux))).toBe(true);
    mux._readIncoming();
    expect(socket.calls).toHaveLength(1);
    expect(socket.calls[0]).toEqual(frames(300));
  });

  it('without it, the same pass is one write per frame (what amqplib does on its own)', () => {
    const socket = new RecordingSocket();
    const mux = new FakeMux(socket, frames(300));
    mux._readIncoming();
    expect(socket.calls).toHaveLength(300);
  });

  it('past the high-water mark, hands each batch to the kernel and goes on while the kernel takes it', () => {
    const socket = new RecordingSocket(1024);
    const mux = new FakeMux(socket, frames(1000, 10)); // 10 kB of frames, a 1 kB mark, a kernel that takes all
    coalesceSocketWrites(modelWith(mux));
    mux._readIncoming();
    expect(mux.blocked).toBe(false); // "full" only when the kernel leaves some: as amqplib's own writes say it
    expect(mux.queued).toEqual([]);
    expect(socket.calls.flat()).toEqual(frames(1000, 10));
    expect(socket.calls.length).toBeGreaterThan(5); // about 10 kB / 1 kB batches...
    expect(socket.calls.length).toBeLessThan(20); // ...not a write per frame
    expect(Math.max(...socket.calls.map((call) => call.length))).toBeLessThanOrEqual(103);
  });

  it('keeps back-pressure: when the kernel does not take a batch, the pass stops and the rest goes out after drain', async () => {
    const socket = new RecordingSocket(1024, true); // each write completes later: the kernel's buffer is full
    const mux = new FakeMux(socket, frames(1000, 10));
    coalesceSocketWrites(modelWith(mux));
    mux._readIncoming();
    expect(mux.blocked).toBe(true);
    expect(mux.queued.length).toBeGreaterThan(0);
    for (let turn = 0; turn < 1_000 && (mux.queued.length > 0 || socket.writableLength > 0); turn++) await settle();
    expect(mux.queued).toEqual([]);
    expect(socket.calls.flat()).toEqual(frames(1000, 10));
    expect(socket.writableCorked).toBe(0);
  });

  it("puts the socket's own write back after each pass", () => {
    const socket = new RecordingSocket();
    const mux = new FakeMux(socket, frames(3));
    coalesceSocketWrites(modelWith(mux));
    mux._readIncoming();
    expect(Object.prototype.hasOwnProperty.call(socket, 'write')).toBe(false);
    expect(socket.write).toBe(Writable.prototype.write);
  });

  it('uncorks the socket when a pass throws, so later frames are not held back', () => {
    const socket = new RecordingSocket();
    const mux = new FakeMux(socket, []);
    const failing = Object.assign(mux, {
      _readIncoming(this: FakeMux) {
        this.out.write('before');
        throw new Error('frame encoding failed');
      },
    });
    coalesceSocketWrites(modelWith(failing));
    expect(() => failing._readIncoming()).toThrow('frame encoding failed');
    expect(socket.writableCorked).toBe(0);
    expect(socket.calls).toEqual([['before']]);
  });

  it('wraps a multiplexer once, however often it is called', () => {
    const socket = new RecordingSocket();
    const mux = new FakeMux(socket, frames(10));
    expect(coalesceSocketWrites(modelWith(mux))).toBe(true);
    const once = mux._readIncoming;
    expect(coalesceSocketWrites(modelWith(mux))).toBe(true);
    expect(mux._readIncoming).toBe(once);
    mux._readIncoming();
    expect(socket.calls).toEqual([frames(10)]);
  });

  it('leaves an unexpected shape alone and says so', () => {
    expect(coalesceSocketWrites(undefined)).toBe(false);
    expect(coalesceSocketWrites({})).toBe(false);
    expect(coalesceSocketWrites(modelWith({ out: {}, _readIncoming: () => undefined }))).toBe(false);
    const noPass = { out: new RecordingSocket() };
    expect(coalesceSocketWrites(modelWith(noPass))).toBe(false);
    expect(noPass).toEqual({ out: noPass.out });
  });

  it('changes only the multiplexer it is given', () => {
    const first = new FakeMux(new RecordingSocket(), frames(5));
    const second = new FakeMux(new RecordingSocket(), frames(5));
    coalesceSocketWrites(modelWith(first));
    second._readIncoming();
    expect(second.out.calls).toHaveLength(5);
  });

  describe("with amqplib's own multiplexer", () => {
    /** Two channels' frame buffers (amqplib's are object-mode PassThroughs) piped into a real Mux over `socket`. */
    async function send(socket: RecordingSocket, perChannel: number, size: number, heartbeats = false, observe?: (mux: RealMux) => void) {
      const mux = new Mux(socket);
      expect(coalesceSocketWrites(modelWith(mux))).toBe(true);
      observe?.(mux);
      const channels = ['a', 'b'].map((name) => {
        const buffer = new PassThrough({ objectMode: true });
        mux.pipeFrom(buffer);
        return { name, buffer };
      });
      const beat = heartbeats ? setInterval(() => socket.write('heartbeat'), 0) : undefined;
      for (let n = 0; n < perChannel; n++)
        for (const { name, buffer } of channels) buffer.write(Buffer.from(`${name}${String(n).padStart(size, '0')}`));
      const all = perChannel * channels.length;
      const frames = () => socket.calls.flat().filter((frame) => frame !== 'heartbeat');
      for (let turn = 0; turn < 10_000 && frames().length < all; turn++) await settle();
      clearInterval(beat);
      // The last heartbeat's write may still be under way (completing later): then the line is clear once it is done.
      for (let turn = 0; turn < 100 && (socket.writableLength > 0 || mux.blocked); turn++) await settle();
      return { mux, frames: frames(), writes: socket.calls.length };
    }
    const inOrder = (frames: string[], name: string) => frames.filter((frame) => frame.startsWith(name)).map((frame) => Number(frame.slice(1)));
    const sequence = (count: number) => Array.from({ length: count }, (_, n) => n);

    it('sends every frame once, each channel in order, in a fraction of the writes, when writes complete at once', async () => {
      const socket = new RecordingSocket();
      const { mux, frames, writes } = await send(socket, 1_000, 4);
      expect(frames).toHaveLength(2_000);
      expect(inOrder(frames, 'a')).toEqual(sequence(1_000));
      expect(inOrder(frames, 'b')).toEqual(sequence(1_000));
      expect(writes).toBeLessThan(20);
      expect({ corked: socket.writableCorked, blocked: mux.blocked }).toEqual({ corked: 0, blocked: false });
    });

    it('moves no channel behind the others while the kernel takes every batch (a reused channel number keeps its order)', async () => {
      const socket = new RecordingSocket(1024); // batches of 1 kB, each taken at once
      const passes: Array<{ blocked: boolean; demoted: number }> = [];
      const { frames } = await send(socket, 1_000, 40, false, (mux) => {
        const corked = mux._readIncoming;
        mux._readIncoming = function observedPass(this: typeof mux) {
          corked.call(this);
          passes.push({ blocked: this.blocked, demoted: this.oldStreams.length });
        };
      });
      expect(frames).toHaveLength(2_000);
      expect(socket.calls.length).toBeGreaterThan(10); // many batches...
      expect(passes.length).toBeGreaterThan(0);
      // ...and after no pass was the multiplexer blocked or a channel's stream moved behind the others
      expect(passes.filter((pass) => pass.blocked || pass.demoted > 0)).toEqual([]);
    });

    it('does the same when writes complete later and frames pass the high-water mark, with heartbeats written beside', async () => {
      const socket = new RecordingSocket(1024, true);
      const { mux, frames } = await send(socket, 2_000, 40, true); // 2 x 2,000 frames of 41 bytes: ~160 kB, a 1 kB mark
      expect(frames).toHaveLength(4_000);
      expect(inOrder(frames, 'a')).toEqual(sequence(2_000));
      expect(inOrder(frames, 'b')).toEqual(sequence(2_000));
      expect(socket.calls.flat().some((frame) => frame === 'heartbeat')).toBe(true);
      expect({ corked: socket.writableCorked, blocked: mux.blocked, buffered: socket.writableLength }).toEqual({
        corked: 0,
        blocked: false,
        buffered: 0,
      });
    });
  });
});
