import type { Channel } from 'amqplib';
import type { BindingDeclaration, TopologyPlan } from '../core/topology.types.js';
import { TopologyMismatchError } from '../errors/topology-mismatch.error.js';
import type { AmqpConnection } from './amqp-connection.js';

const PRECONDITION_FAILED = 406;

function isAmqpError(error: unknown, code: number): error is Error & { code: number } {
  return error instanceof Error && (error as { code?: unknown }).code === code;
}

async function step<T>(kind: 'queue' | 'exchange', name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (isAmqpError(error, PRECONDITION_FAILED))
      throw new TopologyMismatchError(kind, name, error.message.replace(/^.*?PRECONDITION_FAILED - /, '').replace(/"$/, ''));
    throw error;
  }
}

const bind = (channel: Channel, b: BindingDeclaration) =>
  b.destinationType === 'queue' ? channel.bindQueue(b.destination, b.source, b.pattern) : channel.bindExchange(b.destination, b.source, b.pattern);

/**
 * Declares a plan in its order on a channel of its own. A 406 closes the channel, so it surfaces as a
 * TopologyMismatchError naming the queue or exchange, and nothing after it is declared.
 */
export async function declareTopology(connection: AmqpConnection, plan: TopologyPlan): Promise<void> {
  const channel = await connection.createChannel('topology declaration', true);
  try {
    for (const e of plan.exchanges) {
      await step('exchange', e.name, () => channel.assertExchange(e.name, e.type, { durable: true, arguments: e.arguments }));
    }
    for (const q of plan.queues) {
      await step('queue', q.name, () => channel.assertQueue(q.name, { durable: true, arguments: q.arguments }));
    }
    for (const b of plan.bindings) await bind(channel, b);
  } finally {
    await channel.close().catch(() => undefined); // a 406 has closed it already
  }
}
