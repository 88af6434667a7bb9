import type { GetMessage, Options } from 'amqplib';
import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { headersOf, settleWindow, SUITE_OPTIONS, useSuite } from '../support/suite.js';

/** The publish options that carry a got message's properties and headers over unchanged, as an operator's tool does. */
const sameProperties = ({ properties: p }: GetMessage): Options.Publish => ({
  contentType: p.contentType,
  contentEncoding: p.contentEncoding,
  headers: p.headers,
  deliveryMode: p.deliveryMode,
  priority: p.priority,
  correlationId: p.correlationId,
  replyTo: p.replyTo,
  expiration: p.expiration,
  messageId: p.messageId,
  timestamp: p.timestamp,
  type: p.type,
  appId: p.appId,
});

describe('a parked message replayed to its queue starts afresh', () => {
  const suite = useSuite('e2e.replayed');

  /** Starts a handler that always fails (maxAttempts 2) and waits for the park of one message. */
  async function parkOne() {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, maxAttempts: 2, delays: ['50ms'] }, () => {
      throw new Error('still failing');
    });
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    await broker.publish('', queue, { id: 1 }, { messageId: 'replayed' });
    await waitFor(async () => (await broker.count(`${queue}.error`)) === 1, 'the first park');
    return handlerOf(suite.app, Handler).calls;
  }

  it('the parked copy carries no x-death, but the history as x-retry-death-history', async () => {
    const { broker, queue } = suite;
    await parkOne();
    const [parked] = await broker.drain(`${queue}.error`);
    const headers = headersOf(parked);

    expect(headers['x-parked-reason']).toBe('exhausted');
    for (const name of ['x-death', 'x-first-death-queue', 'x-first-death-reason', 'x-first-death-exchange']) expect(headers).not.toHaveProperty(name);
    const history = headers['x-retry-death-history'];
    expect(Array.isArray(history)).toBe(true);
    const entry = (history as Array<Record<string, unknown>>).find((d) => d.queue === queue);
    expect(Number(entry?.count)).toBe(1);
  });

  it('a replayed copy gets maxAttempts more calls before it is parked again', async () => {
    const { broker, queue } = suite;
    const calls = await parkOne();
    expect(calls).toHaveLength(2);

    // An operator's tool: take the parked copy, publish it to the queue by name with the same properties, ack it.
    const parked = await broker.channel.get(`${queue}.error`, { noAck: false });
    if (!parked) throw new Error('no parked copy to replay');
    await broker.publish('', queue, parked.content, sameProperties(parked));
    broker.channel.ack(parked);

    await waitFor(async () => (await broker.count(`${queue}.error`)) === 1, 'the second park', 10_000);
    await settleWindow(500); // bounded: a further call after the second park would show here
    const reparked = await broker.drain(`${queue}.error`);
    expect({ callsAfterReplay: calls.length - 2, parked: reparked.length, left: await broker.count(queue) }).toEqual({
      callsAfterReplay: 2,
      parked: 1,
      left: 0,
    });
    expect(calls.slice(2).map((c) => c.attempt)).toEqual([1, 2]);
    expect(headersOf(reparked[0])).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 2 });
  });
});
