import type { PassThrough } from 'node:stream';
import { internalProperty } from './amqplib.internals.js';

/** The part of a channel's write buffer (a PassThrough amqplib's multiplexer reads from) this relies on. */
type WriteBuffer = Pick<PassThrough, 'readableEnded' | 'destroyed' | 'once'>;

/** amqplib's bit set of channel numbers in use (lib/bitset.js). */
interface NumbersInUse {
  set(index: number): void;
  clear(index: number): void;
}

/** The part of amqplib's Connection (lib/connection.js, 0.10 to 2.x) this relies on; not public API, so checked before use. */
interface ChannelTable {
  channels: Array<{ buffer: WriteBuffer } | null | undefined>;
  freeChannels: NumbersInUse;
  releaseChannel(channel: number): void;
}

/** The marker of a connection whose channel numbers are held already (a second call changes nothing). */
const GUARDED = Symbol('nestjs-amqp-retry.held-channel-numbers');

/**
 * A closed channel's number is given to a new channel only once the closed channel's last frame has left.
 *
 * amqplib frees the number the moment the channel closes, but the closed channel's frames (its CloseOk included) may
 * still wait in amqplib's multiplexer while the socket is full, and the multiplexer takes one frame per channel in
 * turn: a new channel's Open on that number overtakes the CloseOk, and the broker closes the whole connection (504
 * "second 'channel.open' seen") or ignores the Open (docs/design.md, "Channel numbers"). So the number stays taken
 * until the multiplexer has read the closed channel's write buffer to its end; on an idle link, the next turn.
 *
 * Returns false, and changes nothing, when `model` has no such connection (an amqplib whose internals differ).
 */
export function holdChannelNumbersUntilFlushed(model: unknown): boolean {
  const table = channelTableOf(model);
  if (!table) return false;
  if ((table as unknown as Record<symbol, unknown>)[GUARDED]) return true;
  const release = table.releaseChannel;
  // An own property of this one connection: amqplib's prototype stays as it is.
  table.releaseChannel = function releaseWhenFlushed(this: ChannelTable, channel: number): void {
    const buffer = this.channels[channel]?.buffer;
    release.call(this, channel);
    if (!buffer || buffer.readableEnded || buffer.destroyed) return;
    const numbers = this.freeChannels;
    numbers.set(channel);
    let held = true;
    const free = () => {
      if (!held) return;
      held = false;
      numbers.clear(channel);
    };
    buffer.once('end', free);
    // A buffer destroyed before its end emits no 'end'.
    buffer.once('close', free);
  };
  Object.defineProperty(table, GUARDED, { value: true });
  return true;
}

/** The connection of an amqplib ChannelModel (`model.connection`), if it has the expected shape. */
function channelTableOf(model: unknown): ChannelTable | undefined {
  const connection = internalProperty(model, 'connection');
  const numbers = internalProperty(connection, 'freeChannels');
  if (!Array.isArray(internalProperty(connection, 'channels'))) return undefined;
  if (typeof internalProperty(connection, 'releaseChannel') !== 'function') return undefined;
  if (typeof internalProperty(numbers, 'set') !== 'function' || typeof internalProperty(numbers, 'clear') !== 'function') return undefined;
  return connection as ChannelTable;
}
