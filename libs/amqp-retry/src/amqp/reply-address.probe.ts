import { closeWhenOpen, SharedChannel } from './channel-close.settler.js';
import type { Channel } from 'amqplib';
import { errorMessage } from '../core/text/error-message.format.js';
import { probeFailure, type ReplyAddressState } from '../core/publish/reply-address.rules.js';
import { ReplyAddressMemory } from '../core/publish/reply-address.memory.js';
import type { AmqpConnection } from './amqp.connection.js';

/** How many times one address is asked about while connections are lost under its probe for other reasons. */
const MAX_PROBES = 3;

/** A probe channel, and the code the broker closed it with. */
interface ProbeChannel {
  channel: Channel;
  closedWithCode?: number;
}

/**
 * Asks the broker whether a direct reply-to address still has its caller: a passive declare, on one reused channel,
 * on a connection that carries nothing else (the broker closes the whole connection over an address it cannot decode:
 * core/publish/reply-address.rules.ts).
 *
 * One probe at a time, so that the probe in flight when the broker closes the channel or connection is the one it
 * answered: that address is refused; the probes behind it go out once the connection is back. An answer is remembered
 * (core/publish/reply-address.memory.ts), and the requests that ask about an address already waiting for its probe
 * share that probe: a client's requests, all from one address, cost one probe every few seconds, not one each, and a
 * gone caller's many requests one probe and one reopened channel.
 */
export class ReplyAddressProbe {
  private readonly channel = new SharedChannel<ProbeChannel>();
  /** The probes in order, each after the one before. */
  private line: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** The broker's answers: a forged address repeated costs no more probes (each costs a reconnection). */
  private readonly memory = new ReplyAddressMemory();
  /** The probes queued or in flight, by address: as many as the requests waiting for them, which the prefetch bounds. */
  private readonly asking = new Map<string, Promise<ReplyAddressState>>();

  constructor(
    /** The probes' connection, opened at the first. */
    private readonly connection: () => Promise<AmqpConnection>,
    /** How long a probe waits for the connection (the first connect, or a reconnection). */
    private readonly waitMs: number,
  ) {}

  state(address: string): Promise<ReplyAddressState> {
    const known = this.memory.recall(address, Date.now());
    if (known) return Promise.resolve(known);
    const asked = this.asking.get(address);
    if (asked) return asked;
    const turn = this.line.then(() => this.probe(address)).then((state) => this.memory.remember(address, state, Date.now()));
    this.asking.set(address, turn);
    const done = () => this.asking.delete(address);
    turn.then(done, done);
    this.line = turn.catch(() => undefined);
    return turn;
  }

  async close(): Promise<void> {
    this.closed = true;
    await closeWhenOpen(this.channel.take()?.then((open) => open.channel));
  }

  private async probe(address: string): Promise<ReplyAddressState> {
    for (let sent = 1; ; sent++) {
      if (this.closed) return { kind: 'unknown', reason: 'the server is closing' };
      let connection: AmqpConnection;
      let opening: Promise<ProbeChannel> | undefined;
      let open: ProbeChannel;
      try {
        connection = await this.connection();
        await connection.whenConnected(this.waitMs);
        opening = this.open(connection);
        open = await opening;
      } catch (error) {
        return { kind: 'unknown', reason: `the broker could not be asked: ${errorMessage(error)}` };
      }
      const losses = connection.lastLoss.count;
      try {
        await open.channel.checkQueue(address);
        return { kind: 'exists' };
      } catch (error) {
        this.channel.forget(opening); // closed by the broker: the next probe opens another
        const loss = connection.lastLoss;
        const channelCode = open.closedWithCode ?? (error as { code?: unknown } | null)?.code;
        const verdict = probeFailure(typeof channelCode === 'number' ? channelCode : undefined, loss.count > losses ? loss.code : undefined);
        if (verdict === 'gone') return { kind: 'gone' };
        if (verdict === 'refused') {
          const why = loss.count > losses ? `closed the connection (${loss.reason})` : `closed the channel (${errorMessage(error)})`;
          return { kind: 'refused', reason: `the broker ${why} when asked about it` };
        }
        if (sent >= MAX_PROBES) return { kind: 'unknown', reason: `the connection was lost under its probe ${MAX_PROBES} times` };
      }
    }
  }

  private open(connection: AmqpConnection): Promise<ProbeChannel> {
    return this.channel.get((forget) =>
      connection.createChannel('direct reply-to probes', true).then((channel) => {
        const open: ProbeChannel = { channel };
        channel.on('error', (error: { code?: unknown }) => typeof error.code === 'number' && (open.closedWithCode = error.code));
        channel.on('close', forget);
        return open;
      }),
    );
  }
}
