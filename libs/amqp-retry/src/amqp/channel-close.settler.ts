import { withinTime } from '../core/time/duration.timer.js';

/** What amqplib's channels and connections (ChannelModel) have in common for closing. */
export interface Closable {
  close(): Promise<void>;
  once(event: 'close', listener: () => void): unknown;
}

/**
 * Closes a channel or connection and settles once it is closed, whatever closed it: amqplib's `close()` resolves on
 * the broker's CloseOk only, which never comes when the connection closes first; its 'close' event does.
 */
export function closeSettled(closable: Closable): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    closable.once('close', () => resolve());
    closable.close().then(resolve, reject); // amqplib throws when closed already: the executor's throw rejects
  });
}

/** Makes the channel's own `close()` settle as `closeSettled` does, for every caller of it. */
export function withSettledClose<T extends Closable>(channel: T): T {
  const close = channel.close.bind(channel);
  channel.close = () => closeSettled({ close, once: (event, listener) => channel.once(event, listener) });
  return channel;
}

/** How long a close waits for a channel still being opened: a broker that blocks the connection (an alarm) never answers. */
export const CLOSE_WAIT_MS = 1_000;

/**
 * Closes a channel that may still be opening, waiting at most `waitMs` for both: a broker that blocks the connection
 * answers no `channel.open`. Should the connection stay up, the channel is closed once it opens.
 */
export async function closeWhenOpen(opening: Promise<Closable> | undefined, waitMs = CLOSE_WAIT_MS): Promise<void> {
  if (!opening) return;
  const closing = opening.then((opened) => closeSettled(opened)).catch(() => undefined);
  await withinTime(closing, waitMs, () => new Error('still closing')).catch(() => undefined);
}

/**
 * A channel opened at its first use and shared until it closes or fails to open; the use after that opens another.
 * `open` makes it, and hands its 'close' listener `forget`.
 */
export class SharedChannel<T> {
  private current?: Promise<T>;

  get(open: (forget: () => void) => Promise<T>): Promise<T> {
    if (this.current) return this.current;
    const opening = open(() => this.forget(opening));
    this.current = opening;
    opening.catch(() => this.forget(opening));
    return opening;
  }

  /** Forgets `opening` if it is still the one shared. */
  forget(opening: Promise<T> | undefined): void {
    if (this.current === opening) this.current = undefined;
  }

  /** Forgets the one shared, if any, and returns it (to close it). */
  take(): Promise<T> | undefined {
    const current = this.current;
    this.current = undefined;
    return current;
  }
}
