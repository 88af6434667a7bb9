import { getSettled } from '../amqp/channel-get.settler.js';
import type { ConfirmChannel, GetMessage, Options } from 'amqplib';
import { ConfirmWindow, type Outcome } from './confirm.window.js';
import { BROWSE_COUNT_HEADERS, parkedIdOf, toParkedView } from '../core/parking/parked.view.js';
import type { ParkedMessageView } from '../core/parking/parked-messages.types.js';
import { BrokerHeader, ParkedHeader } from '../core/headers/header.names.js';

/**
 * A quorum queue counts every hand-out of a message (`x-delivery-count`), browsing included, and RabbitMQ 4.0+ drops
 * (or dead-letters) a message whose count reaches the queue's delivery limit: 20 by default, whatever the library
 * declared. A browse that meets a message with this count or more refreshes it (see browseParked).
 */
export const REFRESH_AT_DELIVERY_COUNT = 10;

/** A parked message taken (unacked) by a browse. */
export interface BrowsedMessage {
  message: GetMessage;
  view: ParkedMessageView;
  /**
   * A later copy of an id met before in this walk: a refresh interrupted by a crash, or (for copies parked by older
   * versions, whose id is a digest) an identical message parked twice. Reading skips it; a replay or a purge of the id
   * removes it too.
   */
  duplicate: boolean;
  /** Set by the caller that acked the message (replayed or purged it): the walk leaves it alone. */
  settled?: boolean;
}

/** Publishes to a queue through the default exchange, mandatory; resolves when the broker confirms, and says if it returned it. */
export async function publishToQueue(
  channel: ConfirmChannel,
  queue: string,
  content: Buffer,
  options: Options.Publish,
): Promise<'routed' | 'returned'> {
  let outcome: Outcome | undefined;
  let failure: unknown;
  const window = new ConfirmWindow(channel, 1);
  await window.publish(queue, content, options, (result, error) => ((outcome = result), (failure = error)));
  await window.drain();
  if (outcome === 'routed' || outcome === 'returned') return outcome;
  throw failure instanceof Error ? failure : new Error(`The broker refused the publish to "${queue}"`);
}

/**
 * Walks a parking queue front to back, taking each message without acking it: closing the channel gives back every
 * message the caller did not ack, in its place (a classic queue keeps the order; a quorum queue puts returns first, in
 * the order taken). It takes at most as many messages as the queue held when it started, so messages parked during
 * the walk (or replayed messages parked again) are left for the next.
 *
 * A message a quorum queue has handed out REFRESH_AT_DELIVERY_COUNT times or more is refreshed: an identical copy
 * (same body, properties and headers, the same `x-parked-id`, without the counters) is published to the tail of the
 * queue, confirmed, and only then is the old one acked. A crash between the two leaves two copies with one id; a later
 * walk that meets the id twice shows one.
 */
export async function* browseParked(
  channel: ConfirmChannel,
  errorQueue: string,
  fallbackQueue: string,
  onProgress?: (done: number, total: number) => void,
): AsyncGenerator<BrowsedMessage> {
  const { messageCount: total } = await channel.checkQueue(errorQueue);
  const seen = new Set<string>();
  // The message handed to the caller: refreshed after it, or when the caller stops there (show, edit and replay).
  let current: { browsed: BrowsedMessage; id: string } | undefined;
  try {
    for (let done = 0; done < total;) {
      const message = await getSettled(channel, errorQueue, { noAck: false });
      if (!message) break;
      done++;
      const id = parkedIdOf(message);
      const browsed: BrowsedMessage = { message, view: toParkedView(message, errorQueue, fallbackQueue), duplicate: seen.has(id) };
      seen.add(id);
      current = { browsed, id };
      yield browsed;
      current = undefined;
      await refreshIfWorn(channel, errorQueue, browsed, id);
      onProgress?.(done, total);
    }
  } finally {
    if (current) await refreshIfWorn(channel, errorQueue, current.browsed, current.id).catch(() => undefined);
  }
}

/**
 * Refreshes a message the caller left unsettled once the queue has handed it out REFRESH_AT_DELIVERY_COUNT times: a
 * copy without the counters goes to the tail, and the old one is acked once the broker confirmed it. A replay calls it
 * too, for a message it held while its copy awaited a confirm that did not come.
 */
export async function refreshIfWorn(channel: ConfirmChannel, errorQueue: string, { message, settled }: BrowsedMessage, id: string): Promise<void> {
  const worn = Number(message.properties.headers?.[BrokerHeader.deliveryCount] ?? 0) >= REFRESH_AT_DELIVERY_COUNT;
  if (settled || !worn) return;
  const headers = Object.fromEntries(Object.entries(message.properties.headers ?? {}).filter(([key]) => !BROWSE_COUNT_HEADERS.includes(key)));
  const { headers: _headers, deliveryMode: _mode, ...properties } = message.properties;
  const options: Options.Publish = { ...stripUndefined(properties), persistent: true, headers: { ...headers, [ParkedHeader.id]: id } };
  if ((await publishToQueue(channel, errorQueue, message.content, options)) === 'routed') channel.ack(message);
}

const stripUndefined = (record: Record<string, unknown>) => Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined));
