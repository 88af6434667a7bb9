import { readJsonObject } from '../topology/json-record.reader.js';
import { readPauseBy } from './queue.state.js';

/**
 * The direct exchange on which operators (`amqp-retry pause|resume`) reach every instance consuming queue Q: each
 * engine binds an exclusive queue with its handler queues' names. Whoever may write to it may pause and resume.
 */
export const CONTROL_EXCHANGE = 'amqp-retry.control';

/** Longest control message body read: a command is a few hundred bytes. */
const MAX_BODY = 4_096;

export type ControlCommand = { command: 'pause'; queue: string; by: string; reason?: string } | { command: 'resume'; queue: string; by: string };

/** Encodes a command as the CLI sends it. */
export const encodeControl = (command: ControlCommand): Buffer => Buffer.from(JSON.stringify(command));

/** Reads a control message, JSON `{ command: 'pause' | 'resume', queue, by, reason? }` keyed by `queue`, or a problem in words. */
export function decodeControl(content: Buffer, routingKey: string): ControlCommand | { problem: string } {
  if (content.length > MAX_BODY) return { problem: `the body has ${content.length} bytes; a command has at most ${MAX_BODY}` };
  const body = readJsonObject(content);
  if ('problem' in body) return body;
  const { command, queue, by, reason } = body.fields;
  if (command !== 'pause' && command !== 'resume') return { problem: `command is ${JSON.stringify(command)}; use "pause" or "resume"` };
  if (typeof queue !== 'string' || queue !== routingKey) return { problem: 'queue must be the routing key the command was sent with' };
  const who = readPauseBy(by, command === 'pause' ? reason : undefined);
  if ('problem' in who) return who;
  return command === 'pause' ? { command, queue, ...who } : { command, queue, by: who.by };
}
