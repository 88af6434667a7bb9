import amqp, { type ChannelModel, type Options } from 'amqplib';
import { MAX_TIMER_MS, withinTime } from '../core/time/duration.timer.js';

/** What opens a connection to a broker: amqplib's `connect`, or a stand-in for it. */
export type BrokerConnect = (url: string, socketOptions?: Record<string, unknown>) => Promise<ChannelModel>;

/** On the global object, so that every copy of the library in a process sees the same stand-in. */
const CONNECTOR = Symbol.for('nestjs-amqp-retry.broker-connector');

type Holder = { [CONNECTOR]?: BrokerConnect };

/** Opens every connection of the library: through amqplib, unless a stand-in is set (`nestjs-amqp-retry/testing`). */
export function connectBroker(url: string, socketOptions?: Record<string, unknown>): Promise<ChannelModel> {
  const standIn = (globalThis as Holder)[CONNECTOR];
  return standIn ? standIn(url, socketOptions) : amqp.connect(url, socketOptions as Options.Connect);
}

/**
 * Sets the stand-in every connection opens on from now on (undefined: amqplib again); with `only`, removes the
 * stand-in only when it is that one (a caller takes back only what it set).
 * @internal The test harness's seam.
 */
export function replaceBrokerConnect(connect: BrokerConnect | undefined, only?: BrokerConnect): void {
  if (connect) (globalThis as Holder)[CONNECTOR] = connect;
  else if (only === undefined || (globalThis as Holder)[CONNECTOR] === only) delete (globalThis as Holder)[CONNECTOR];
}

/**
 * Connects within `timeoutMs`, TCP and AMQP handshake together: amqplib's `timeout` is the socket's idle timeout (a
 * Node timer: at most MAX_TIMER_MS). A connection that opens after its caller gave up on it is closed: its socket would
 * keep the process alive.
 */
export async function connectWithin(url: string, timeoutMs: number, timeoutText: string, socket?: Record<string, unknown>): Promise<ChannelModel> {
  const connecting = connectBroker(url, { ...socket, timeout: Math.min(timeoutMs, MAX_TIMER_MS) });
  try {
    return await withinTime(connecting, timeoutMs, () => new Error(timeoutText));
  } catch (error) {
    void connecting.then((late) => late.close()).catch(() => undefined);
    throw error;
  }
}
