import { internalProperty } from './amqplib.internals.js';

/** The part of a channel's write buffer (a PassThrough amqplib's multiplexer reads from) this relies on. */
interface WriteBuffer {
  readonly readableEnded: boolean;
  readonly destroyed: boolean;
  once(event: 'end' | 'close', listener: () => void): unknown;
}

/** amqplib's bit set of channel numbers in use (lib/bitset.js). */
interface NumbersInUse {
  set(index: number): void;
  clear(index: number): void;
}

/**
 * The part of amqplib's Connection (lib/connection.js, amqplib 0.10 to 2.x) this relies on: `channels`, the open
 * channels by number with their write buffers; `freeChannels`, the numbers in use; `releaseChannel`, which frees a
 * closed channel's number. It is not public API, so it is checked before use.
 */
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
 * amqplib frees a channel's number the moment the channel closes, and the next channel opened takes the lowest free
 * number. But frames the closed channel queued may still wait in amqplib's frame multiplexer: publishes made just
 * before the broker's Close arrived, and the CloseOk itself. They wait there whenever the socket is full (a link to
 * the broker that is slow or stalls for a moment, a large backlog of publishes), and the multiplexer takes one frame
 * from each channel in turn, so the new channel's Open overtakes the old channel's CloseOk. The broker, for which the
 * number is still the closing channel's, then closes the whole connection (504 CHANNEL_ERROR "second 'channel.open'
 * seen") or ignores the Open, and the new channel never opens: one publish to a missing exchange failed every other
 * publish on the connection (docs/design.md, "Channel numbers").
 *
 * So the number stays taken until amqplib's multiplexer has read the closed channel's write buffer to its end (the
 * CloseOk is then in the socket, ahead of anything a later channel writes); a channel opened meanwhile takes another
 * number. On an idle link that is the next turn of the event loop.
 *
 * Returns false, and changes nothing, when `model` has no such connection (an amqplib whose internals differ).
 */
export function holdChannelNumbersUntilFlushed(model: unknown): boolean {
  const table = channelTableOf(model);
  if (!table) return false;
  if ((table as unknown as Record<symbol, unknown>)[GUARDED]) return true;
  const release = table.releaseChannel;
  // An own property of this one connection: amqplib's prototype, and every other connection, stay as they are.
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
    // A buffer destroyed before its end (amqplib never does this) would emit no 'end': its number is not held for good.
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
