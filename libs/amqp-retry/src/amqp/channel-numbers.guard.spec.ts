import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Duplex, type PassThrough } from 'node:stream';
import { holdChannelNumbersUntilFlushed } from './channel-numbers.guard.js';

// amqplib's own Connection (not an exported subpath): the guard must hold for the amqplib installed.
const require = createRequire(import.meta.url);
interface RealConnection {
  muxer: { blocked: boolean; _readIncoming(): void };
  channels: Array<{ buffer: PassThrough } | null>;
  freshChannel(channel: { onBufferDrain(): void }): number;
  releaseChannel(channel: number): void;
}
const { Connection } = require(join(dirname(require.resolve('amqplib')), 'lib', 'connection.js')) as {
  Connection: new (stream: Duplex) => RealConnection;
};

/**
 * A socket stand-in that records what is written to it, in order (a frame's name: the text before any padding).
 * `full`: a kernel that takes nothing until `drain()`, after which it takes everything at once.
 */
class RecordingSocket extends Duplex {
  readonly written: string[] = [];
  private readonly held: Array<() => void> = [];
  constructor(private full = false) {
    super({ writableHighWaterMark: 16 * 1024 }); // Node 20's default; 64 KiB from Node 22
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.written.push(chunk.toString().split(' ')[0]);
    if (this.full) this.held.push(done);
    else done();
  }
  override _read(): void {}
  async drain(): Promise<void> {
    await settle(); // the multiplexer's pass for what was queued last (it finds the socket full)
    this.full = false;
    for (const done of this.held.splice(0)) done();
    for (let turn = 0; turn < 5; turn++) await settle();
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const anyChannel = { onBufferDrain: () => undefined };
/** A frame larger than the socket's high-water mark (16 KiB): written to a full socket, it makes the socket say "full". */
const LARGE = ' '.repeat(32 * 1024);

/** A connection on a full socket: amqplib's multiplexer writes until the socket says "full", then holds the rest. */
function fullSocketConnection(guarded: boolean) {
  const socket = new RecordingSocket(true);
  const connection = new Connection(socket);
  if (guarded) expect(holdChannelNumbersUntilFlushed({ connection })).toBe(true);
  const send = (channel: number, ...frames: string[]) => frames.forEach((frame) => connection.channels[channel]?.buffer.write(`${frame}@${channel}`));
  return { socket, connection, send, drain: () => socket.drain() };
}

/** The broker's Close came while the socket was full: publishes and the CloseOk wait, and amqplib released the number. */
async function closedWithFramesWaiting(guarded: boolean) {
  const wire = fullSocketConnection(guarded);
  const first = wire.connection.freshChannel(anyChannel);
  wire.send(first, `publish-1${LARGE}`, 'publish-2', 'publish-3');
  await settle();
  await settle(); // the multiplexer wrote publish-1, and the socket said "full"
  expect(wire.socket.written).toEqual([`publish-1`]);
  wire.send(first, 'close-ok');
  wire.connection.releaseChannel(first);
  return { ...wire, first };
}

describe('holdChannelNumbersUntilFlushed', () => {
  it("without it, amqplib gives the closed channel's number again at once, and the new Open overtakes the CloseOk", async () => {
    const { connection, socket, send, drain, first } = await closedWithFramesWaiting(false);
    const next = connection.freshChannel(anyChannel);
    expect(next).toBe(first);
    send(next, 'open');
    await drain();
    expect(socket.written).toEqual(expect.arrayContaining([`open@${first}`, `close-ok@${first}`]));
    expect(socket.written.indexOf(`open@${first}`)).toBeLessThan(socket.written.indexOf(`close-ok@${first}`));
  });

  it("keeps a closed channel's number while its frames wait: a channel opened meanwhile takes another", async () => {
    const { connection, socket, send, drain, first } = await closedWithFramesWaiting(true);
    const next = connection.freshChannel(anyChannel);
    expect(next).not.toBe(first);
    send(next, 'open');
    await drain();
    expect(socket.written).toEqual(expect.arrayContaining([`close-ok@${first}`, `open@${next}`]));
    expect(socket.written.filter((frame) => frame.endsWith(`@${first}`) || frame === 'publish-1')).toEqual([
      `publish-1`,
      `publish-2@${first}`,
      `publish-3@${first}`,
      `close-ok@${first}`,
    ]);
  });

  it('holds the number for as long as the CloseOk waits, however many turns that takes', async () => {
    const { connection, socket, first } = await closedWithFramesWaiting(true);
    for (let turn = 0; turn < 5; turn++) await settle();
    expect(socket.written).not.toContain(`close-ok@${first}`);
    expect(connection.freshChannel(anyChannel)).not.toBe(first);
  });

  it('gives the number back once the frames are out, so numbers stay low', async () => {
    const { connection, socket, send, drain, first } = await closedWithFramesWaiting(true);
    await drain();
    expect(socket.written.at(-1)).toBe(`close-ok@${first}`);
    const reused = connection.freshChannel(anyChannel);
    expect(reused).toBe(first);
    send(reused, 'open');
    await drain();
    expect(socket.written.slice(-2)).toEqual([`close-ok@${first}`, `open@${first}`]);
  });

  it('holds the number of a channel closed with nothing waiting only until the next pass of the multiplexer', async () => {
    const socket = new RecordingSocket();
    const connection = new Connection(socket);
    holdChannelNumbersUntilFlushed({ connection });
    const first = connection.freshChannel(anyChannel);
    connection.releaseChannel(first);
    await settle();
    await settle();
    expect(connection.freshChannel(anyChannel)).toBe(first);
  });

  it('gives the number back when the buffer is destroyed instead of read to its end', async () => {
    const { connection, first } = await closedWithFramesWaiting(true);
    const mux = (connection as unknown as { muxer: { newStreams: PassThrough[]; oldStreams: PassThrough[] } }).muxer;
    for (const stream of [...mux.newStreams, ...mux.oldStreams]) stream.destroy();
    await settle();
    expect(connection.freshChannel(anyChannel)).toBe(first);
  });

  it('guards a connection once, however often it is called', () => {
    const connection = new Connection(new RecordingSocket());
    expect(holdChannelNumbersUntilFlushed({ connection })).toBe(true);
    const release = connection.releaseChannel;
    expect(holdChannelNumbersUntilFlushed({ connection })).toBe(true);
    expect(connection.releaseChannel).toBe(release);
  });

  it('changes nothing, and says so, for an amqplib whose connection differs', () => {
    expect(holdChannelNumbersUntilFlushed(undefined)).toBe(false);
    expect(holdChannelNumbersUntilFlushed({ connection: { channels: [], releaseChannel: () => undefined } })).toBe(false);
    expect(
      holdChannelNumbersUntilFlushed({
        connection: { freeChannels: { set: () => undefined, clear: () => undefined }, releaseChannel: () => undefined },
      }),
    ).toBe(false);
  });
});
