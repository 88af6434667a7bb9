import type { QueueTypeMismatch } from '../../errors/topology-mismatch.error.js';
import type { QueueType } from './topology.types.js';
import { QueueArgument } from '../headers/header.names.js';

export type { QueueTypeMismatch };

/**
 * The argument every queue the library declares carries, even classic ones: without it the vhost's default queue type
 * decides, and the library would run quorum queues believing them classic. Redeclaring a classic queue made without
 * it is accepted (observed on 3.10.8, 4.0.5 and 4.3.6).
 */
export const queueTypeArgument = (type: QueueType): { [QueueArgument.queueType]: QueueType } => ({ [QueueArgument.queueType]: type });

/**
 * What every quorum queue of the library adds: dead-lettering that waits for the target's confirm (the default, at
 * most once, loses a message with a node lost in between), which requires `reject-publish` overflow.
 */
export const QUORUM_DEAD_LETTERING = { [QueueArgument.deadLetterStrategy]: 'at-least-once', [QueueArgument.overflow]: 'reject-publish' } as const;

// The forms of RabbitMQ's 406 text for x-queue-type (3.10.8, 4.0.5, 4.3.6), e.g.
//   inequivalent arg 'x-queue-type' for queue 'q' in vhost '/': received 'classic' but current is 'quorum'
//   ... received the value 'quorum' of type 'longstr' but current is none
//   ... received none but current is the value 'quorum' of type 'longstr'
const INEQUIVALENT_TYPE = /inequivalent arg 'x-queue-type' for queue .*?: received (.+?) but current is (.+?)"?$/s;
const VALUE = /^(?:the value )?'([^']*)'(?: of type '[^']*')?$/;

/** `none` is a queue declared without the argument: classic, the broker's own default (a vhost's applies only at creation). */
function readType(text: string): string | undefined {
  if (text.trim() === 'none') return 'classic';
  return VALUE.exec(text.trim())?.[1];
}

/**
 * The queue's real type, read from the broker's refusal (406 PRECONDITION_FAILED) to declare it with the configured
 * type: undefined when the refusal is about another argument, or names no other type than the configured one.
 * @example queueTypeMismatch('classic', "... inequivalent arg 'x-queue-type' for queue 'orders' in vhost '/': received 'classic' but current is 'quorum'")
 * // { configured: 'classic', found: 'quorum' }
 */
export function queueTypeMismatch(configured: QueueType, brokerMessage: string): QueueTypeMismatch | undefined {
  const match = INEQUIVALENT_TYPE.exec(brokerMessage);
  if (!match) return undefined;
  const found = readType(match[2]);
  return found !== undefined && found !== configured ? { configured, found } : undefined;
}

/** The type a queue declaration asks for: its `x-queue-type` argument, classic without one. */
export function declaredQueueType(args: Readonly<Record<string, unknown>> | undefined): QueueType | undefined {
  const type = args?.[QueueArgument.queueType];
  return type === 'quorum' || type === 'classic' ? type : undefined;
}

// inequivalent arg 'KEY' for queue 'q' in vhost '/': received ... but current is none | 'v' | the value V of type 'T'
const INEQUIVALENT_ARG = /inequivalent arg '([^']+)' for queue .*?: received .+? but current is (none|'[^']*'|the value (.+?) of type '([^']+)')"?$/s;

/**
 * The next declaration to try when the broker refused one for another argument than the type: that argument as the
 * queue has it, the type kept. The broker checks the type after `x-dead-letter-strategy` and the limits, so a few such
 * steps reach it. Undefined when the refusal or the value cannot be read back.
 */
export function nextTypeProbe(args: Readonly<Record<string, unknown>>, brokerMessage: string): Record<string, unknown> | undefined {
  const match = INEQUIVALENT_ARG.exec(brokerMessage);
  if (!match || match[1] === QueueArgument.queueType) return undefined;
  const [, key, current, value, type] = match;
  const next: Record<string, unknown> = { ...args };
  if (current === 'none') delete next[key];
  else if (value === undefined) next[key] = current.slice(1, -1);
  else if (type === 'longstr') next[key] = value.replace(/^'|'$/g, '');
  else if (type === 'bool') next[key] = value === 'true';
  else if (/^(long|signedint|short|byte|unsignedbyte|unsignedshort|unsignedint)$/.test(type) && /^-?\d+$/.test(value)) next[key] = Number(value);
  else return undefined;
  return next;
}

/**
 * The options of a queue private to one connection (a lock, a reply or command queue): exclusive, gone with its
 * connection, and classic by name, since a vhost whose default queue type is quorum would otherwise type it too.
 */
export const PRIVATE_QUEUE_OPTIONS = { exclusive: true, autoDelete: true, durable: false, arguments: queueTypeArgument('classic') } as const;
