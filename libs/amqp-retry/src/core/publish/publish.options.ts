import type { Options } from 'amqplib';
import type { Duration } from '../time/duration.reader.js';
import { newMessageId } from '../message/message-id.factory.js';

/** Options of RetryPublisher.publish (and, but for the delay's range, of RetryClient.emit). */
export interface PublishOptions {
  /**
   * Deliver after this long instead of now: milliseconds or a duration ('90s', '30m', '3d'), from 0 to about 49.7
   * days. 0 or absent publishes at once. Never early; see docs/delays.md for the lateness measured.
   */
  delay?: Duration;
  /** Headers of the message, besides those the library sets. */
  headers?: Record<string, unknown>;
  /** Default: a random UUID. */
  messageId?: string;
  /** Default: true. A delayed message waits persistent in the ladder whatever this says, and is delivered with it. */
  persistent?: boolean;
  /**
   * A per-message TTL in milliseconds (the AMQP `expiration` property): the broker drops (or dead-letters) the message
   * if it waits longer in its queue. For a delayed message it runs from delivery, after the delay, never during it.
   * A whole number from 0 to 2^32 - 1 (a number or a string of digits); anything else is a RangeError.
   */
  expiration?: number | string;
  /**
   * The message's priority (the AMQP `priority` property), a whole number from 0 to 255: in a handler queue declared
   * with `maxPriority`, higher priorities are delivered first. Anything else is a RangeError.
   */
  priority?: number;
  /** The AMQP `correlationId` property, e.g. the request or the business transaction this message belongs to. */
  correlationId?: string;
  /** The AMQP `replyTo` property: where a consumer should answer, when it answers. */
  replyTo?: string;
  /** The AMQP `type` property: the message's type name, e.g. 'order.created.v2'. */
  type?: string;
  /** The AMQP `appId` property: the application that published it. */
  appId?: string;
  /** The AMQP `timestamp` property: a Date, or seconds since the epoch. */
  timestamp?: Date | number;
}

/** What `RetryPublisher.publish` sent, once the broker confirmed it: to log, store or correlate. */
export interface PublishedMessage {
  /** The message id it was sent with: the one given, or the UUID the publisher made. */
  messageId: string;
  /** The exchange it was published to ('' for the default exchange). */
  exchange: string;
  /** The routing key it was published with. */
  routingKey: string;
  /** How long it waits in the delay ladder, in ms; 0 when it was published at once. */
  delayMs: number;
  /** The AMQP properties it was published with (a delayed message is delivered with these when due). */
  properties: Readonly<Options.Publish>;
}

/**
 * Refuses publish options that are not an object (null, an array, a string) with a TypeError naming `where` and the fix,
 * before anything reads them: `null.delay` would fail as a bare TypeError.
 * @example readPublishOptions(null, 'RetryPublisher.publish') // TypeError: RetryPublisher.publish: the options are null; ...
 */
export function readPublishOptions<T extends object>(options: T | undefined, where: string): Partial<T> {
  if (options === undefined) return {};
  if (typeof options === 'object' && (options as unknown) !== null && !Array.isArray(options)) return options;
  const shown = options === null ? 'null' : Array.isArray(options) ? 'an array' : `a ${typeof options}`;
  throw new TypeError(`${where}: the options are ${shown}; give an object of publish options, e.g. { delay: '30s' }, or leave them out`);
}

/** The options publishProperties sets as they are, each only when given. */
const COPIED_OPTIONS = ['expiration', 'priority', 'correlationId', 'replyTo', 'type', 'appId'] as const;

/**
 * The AMQP properties of a message published with `options`, over `base` (what the caller always sets): the message id
 * given or a new one, persistent unless told otherwise, and each other property only when given (amqplib sends an
 * absent one as none anyway: no spread of a literal per publish). Their values are checked where every publish is
 * (checkPublishProperties), with the same errors whichever publisher sent them.
 * @example publishProperties({ correlationId: 'req-7' }, { contentType: 'application/json' }).messageId // a new UUID
 */
export function publishProperties(options: Omit<PublishOptions, 'delay'>, base: Options.Publish): Options.Publish & { messageId: string } {
  const properties = base as Options.Publish & { messageId: string };
  properties.persistent = options.persistent ?? true;
  properties.messageId = options.messageId ?? newMessageId();
  properties.headers = options.headers;
  for (const key of COPIED_OPTIONS) if (options[key] !== undefined) properties[key] = options[key] as never;
  if (options.timestamp !== undefined) properties.timestamp = secondsOf(options.timestamp);
  return properties;
}

/** A timestamp as AMQP carries it: whole seconds since the epoch (a Date that is no date is a TypeError, as a bad number is). */
const secondsOf = (timestamp: Date | number): number => (timestamp instanceof Date ? Math.floor(timestamp.getTime() / 1000) : timestamp);
