import type { Channel } from 'amqplib';
import { MAX_TIERS } from '../core/handler-config.js';
import { staleTierUnbindings, retryNames } from '../core/retry-topology.plan.js';
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

const unbind = (channel: Channel, b: BindingDeclaration) =>
  b.destinationType === 'queue'
    ? channel.unbindQueue(b.destination, b.source, b.pattern)
    : channel.unbindExchange(b.destination, b.source, b.pattern);

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
    for (const b of plan.unbindings) await unbind(channel, b);
    for (const b of plan.bindings) await bind(channel, b);
  } finally {
    await channel.close().catch(() => undefined); // a 406 has closed it already
  }
}

/**
 * Cuts the routes into tiers beyond the configured number, left by an earlier configuration with more tiers, so
 * that no message is routed into two tiers. Such a tier keeps its messages and returns them to the queue as they
 * expire. Probing ends at the first tier that does not exist (a 404, which closes the probing channel).
 */
export async function retireStaleTiers(connection: AmqpConnection, queue: string, tiers: number): Promise<number> {
  let retired = 0;
  for (let tier = tiers + 1; tier <= MAX_TIERS; tier++) {
    const probe = await connection.createChannel('stale tier probe', true);
    try {
      await probe.checkQueue(retryNames(queue).tierQueue(tier));
    } catch {
      return retired; // the 404 closed the probe channel
    }
    for (const b of staleTierUnbindings(queue, tier)) await unbind(probe, b);
    await probe.close();
    retired++;
  }
  return retired;
}
