import { closeSettled } from './channel-close.settler.js';
import { connectWithin } from './broker.connector.js';
import { withinTime } from '../core/time/duration.timer.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { PartitionsPluginError } from '../errors/partitions-plugin.error.js';
import { TopologyMismatchError } from '../errors/topology-mismatch.error.js';
import { refusalText } from './topology.declarer.js';

const COMMAND_INVALID = 503;
const PRECONDITION_FAILED = 406;

export interface HashExchangeProbe {
  urls: readonly string[];
  connectTimeoutMs: number;
  /** The partitioned handler's queue, named in the error. */
  queue: string;
  exchange: string;
  arguments: Record<string, unknown>;
  /** Only for tests: a type the broker lacks. */
  type?: string;
}

/**
 * Declares a partitioned handler's consistent-hash exchange on a connection of its own: a broker without the plugin
 * answers with 503, which closes the whole connection. Throws PartitionsPluginError then, TopologyMismatchError when
 * the exchange exists with another type or arguments.
 */
export async function declareHashExchange(probe: HashExchangeProbe): Promise<void> {
  const failures: string[] = [];
  for (const url of probe.urls) {
    const model = await connectWithin(url, probe.connectTimeoutMs, `no answer within ${probe.connectTimeoutMs} ms`).catch((error: unknown) => {
      failures.push(errorMessage(error));
    });
    if (!model) continue;
    // amqplib rejects the declaration with "channel ended"; the connection's 'error', a moment later, has the reason.
    let closedWith: Error | undefined;
    const closed = new Promise<void>((resolve) => model.once('close', () => resolve()));
    model.on('error', (error: Error) => (closedWith = error));
    try {
      const channel = await model.createChannel();
      channel.on('error', () => undefined);
      await channel.assertExchange(probe.exchange, probe.type ?? 'x-consistent-hash', { durable: true, arguments: probe.arguments });
      return;
    } catch (rejection) {
      await withinTime(closed, 2_000, () => new Error('no close')).catch(() => undefined);
      const error = closedWith ?? rejection;
      const code = (error as { code?: unknown }).code;
      const text = errorMessage(error);
      if (code === COMMAND_INVALID || /unknown exchange type/i.test(text))
        throw new PartitionsPluginError(probe.queue, text.replace(/^.*?COMMAND_INVALID - /, ''));
      if (code === PRECONDITION_FAILED) throw new TopologyMismatchError('exchange', probe.exchange, refusalText(text));
      throw error;
    } finally {
      await closeSettled(model).catch(() => undefined);
    }
  }
  throw new Error(`Could not connect to RabbitMQ to declare the hash exchange of "${probe.queue}": ${failures.join('; ')}`);
}
