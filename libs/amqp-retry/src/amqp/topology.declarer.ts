import type { Channel } from 'amqplib';
import type { BindingDeclaration, TopologyPlan } from '../core/topology/topology.types.js';
import { declaredQueueType, nextTypeProbe, queueTypeMismatch, type QueueTypeMismatch } from '../core/topology/queue-type.mismatch.js';
import { TopologyMismatchError } from '../errors/topology-mismatch.error.js';
import type { AmqpConnection } from './amqp.connection.js';

const PRECONDITION_FAILED = 406;

function isAmqpError(error: unknown, code: number): error is Error & { code: number } {
  return error instanceof Error && (error as { code?: unknown }).code === code;
}

/** The broker's text of a 406, without amqplib's wording around it. */
export const refusalText = (message: string) => message.replace(/^.*?PRECONDITION_FAILED - /, '').replace(/"$/, '');

const MAX_TYPE_PROBES = 8;

/**
 * The queue's real type when it differs from the configured one. The broker names the type only when it is the first
 * argument that differs in its order of checks; otherwise the declaration is tried again on channels of its own, each
 * time with the refused argument as the queue has it, until the refusal names the type or the declaration is
 * accepted (same type). Runs only on a start that fails anyway.
 */
async function findTypeMismatch(
  connection: AmqpConnection,
  name: string,
  configured: 'classic' | 'quorum',
  args: Readonly<Record<string, unknown>>,
  brokerMessage: string,
): Promise<QueueTypeMismatch | undefined> {
  let refusal = brokerMessage;
  let probe: Record<string, unknown> | undefined = { ...args };
  for (let tries = 0; tries < MAX_TYPE_PROBES; tries++) {
    const found = queueTypeMismatch(configured, refusal);
    if (found) return found;
    probe = nextTypeProbe(probe, refusal);
    if (!probe) return undefined;
    const channel = await connection.createChannel('queue type check', true);
    try {
      await channel.checkQueue(name); // never create it: should it be gone now, there is nothing to compare
      await channel.assertQueue(name, { durable: true, arguments: probe });
      return undefined; // accepted: the type is the configured one, other arguments differ
    } catch (error) {
      if (!isAmqpError(error, PRECONDITION_FAILED)) return undefined;
      refusal = refusalText(error.message);
    } finally {
      await channel.close().catch(() => undefined);
    }
  }
  return undefined;
}

const bind = (channel: Channel, b: BindingDeclaration) =>
  b.destinationType === 'queue'
    ? channel.bindQueue(b.destination, b.source, b.pattern, b.arguments)
    : channel.bindExchange(b.destination, b.source, b.pattern, b.arguments);

/**
 * Declares a plan in its order on a channel of its own; a 406 surfaces as a TopologyMismatchError and ends it.
 *
 * `probeTypes`: on a queue's 406, find its real type for the error. An accepted probe recreates a queue deleted since
 * its check, so declarations repeated in a loop pass false: an operator deleting that queue never races a probe.
 */
export async function declareTopology(connection: AmqpConnection, plan: TopologyPlan, probeTypes = true): Promise<void> {
  const channel = await connection.createChannel('topology declaration', true);
  /** Runs one declaration; a 406 becomes a TopologyMismatchError (naming both types of a queue whose type differs). */
  const step = async (kind: 'queue' | 'exchange', name: string, args: Readonly<Record<string, unknown>> | undefined, run: () => Promise<unknown>) => {
    try {
      await run();
    } catch (error) {
      if (!isAmqpError(error, PRECONDITION_FAILED)) throw error;
      const brokerMessage = refusalText(error.message);
      const configured = kind === 'queue' && probeTypes ? declaredQueueType(args) : undefined;
      const probe = configured && args && findTypeMismatch(connection, name, configured, args, brokerMessage).catch(() => undefined);
      throw new TopologyMismatchError(kind, name, brokerMessage, probe ? await probe : undefined);
    }
  };
  try {
    for (const e of plan.exchanges) {
      await step('exchange', e.name, e.arguments, () => channel.assertExchange(e.name, e.type, { durable: true, arguments: e.arguments }));
    }
    for (const q of plan.queues)
      await step('queue', q.name, q.arguments, () => channel.assertQueue(q.name, { durable: true, arguments: q.arguments }));
    for (const b of plan.bindings) await bind(channel, b);
  } finally {
    await channel.close().catch(() => undefined); // a 406 has closed it already
  }
}
