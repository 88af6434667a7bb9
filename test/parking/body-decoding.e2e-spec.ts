import { gzipSync } from 'node:zlib';
import type { ConsumeMessage, Options } from 'amqplib';
import type { RetryHandlerOptions as HandlerOptions, RetryModuleOptions as ModuleOptions } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { headersOf, settleWindow, SUITE_OPTIONS, useSuite } from '../support/suite.js';

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

describe('strict body decoding and the deserializer option', () => {
  const suite = useSuite('e2e.body');

  /**
   * Starts a handler that always succeeds, publishes `body` and then a good message (prefetch 1, so the good one is
   * handled after the first was settled), and returns the calls for the first, the good one's calls, and the parked copies.
   */
  async function deliver(body: Buffer, publish: Options.Publish, options: Partial<HandlerOptions> = {}, moduleOptions: ModuleOptions = {}) {
    const { broker, queue } = suite;
    const handlerOptions: HandlerOptions = { queue, prefetch: 1, maxAttempts: 2, delays: ['50ms'], ...options };
    const Handler = handlerFor(handlerOptions, () => undefined);
    suite.app = await startApp([Handler], { ...SUITE_OPTIONS, ...moduleOptions });
    const calls = handlerOf(suite.app, Handler).calls;
    await broker.publish('', queue, body, { messageId: 'under-test', ...publish });
    await broker.publish('', queue, Buffer.from('{"kind":"good"}'), { messageId: 'good', contentType: 'application/json' });
    const isGood = (c: (typeof calls)[number]) => c.properties.messageId === 'good';
    // The good message is handled once the one under test was settled (acked or parked): that is the final state.
    await waitFor(() => calls.some(isGood), 'the good message after the one under test', 5_000).catch(() => undefined);
    await settleWindow(300); // bounded: a late park or extra call would show here
    const parked = await broker.drain(`${queue}.error`);
    return { calls: calls.filter((c) => !isGood(c)), goodCalls: calls.filter(isGood).length, parked, left: await broker.count(queue) };
  }

  it('parks a body that is not valid UTF-8 as malformed, without a handler call', async () => {
    const result = await deliver(Buffer.from([0x7b, 0xff, 0x7d]), { contentType: 'application/json' });
    expect({ calls: result.calls.length, good: result.goodCalls, parked: result.parked.length, left: result.left }).toEqual({
      calls: 0,
      good: 1,
      parked: 1,
      left: 0,
    });
    expect(headersOf(result.parked[0])).toMatchObject({ 'x-parked-reason': 'malformed', 'x-retry-attempts': 0 });
    expect(headersOf(result.parked[0])['x-exception-message']).toMatch(/UTF-8/i);
    expect(result.parked[0].content.equals(Buffer.from([0x7b, 0xff, 0x7d]))).toBe(true);
  });

  it('parks invalid UTF-8 inside a JSON string too, rather than hand the handler U+FFFD', async () => {
    const body = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff]), Buffer.from('"}')]);
    const result = await deliver(body, { contentType: 'application/json' });
    expect({ calls: result.calls.map((c) => c.payload), parked: result.parked.length }).toEqual({ calls: [], parked: 1 });
    expect(headersOf(result.parked[0])).toMatchObject({ 'x-parked-reason': 'malformed', 'x-retry-attempts': 0 });
    expect(headersOf(result.parked[0])['x-exception-message']).toMatch(/UTF-8/i);
  });

  it('parks a gzip body on a JSON handler naming its content encoding, body kept byte for byte', async () => {
    const body = gzipSync('{"id":1}');
    const result = await deliver(body, { contentType: 'application/json', contentEncoding: 'gzip' });
    expect({ calls: result.calls.length, good: result.goodCalls, parked: result.parked.length, left: result.left }).toEqual({
      calls: 0,
      good: 1,
      parked: 1,
      left: 0,
    });
    expect(headersOf(result.parked[0])).toMatchObject({ 'x-parked-reason': 'malformed', 'x-retry-attempts': 0 });
    expect(headersOf(result.parked[0])['x-exception-message']).toMatch(
      /^body is compressed \(content encoding "gzip"\), and the 'json' deserializer does not decompress; /,
    );
    expect({ body: result.parked[0].content.equals(body), encoding: result.parked[0].properties.contentEncoding }).toEqual({
      body: true,
      encoding: 'gzip',
    });
  });

  it('accepts a JSON body preceded by a UTF-8 byte order mark', async () => {
    const result = await deliver(Buffer.concat([BOM, Buffer.from('{"id":1,"note":"héllo"}')]), { contentType: 'application/json' });
    expect({ payloads: result.calls.map((c) => c.payload), parked: result.parked.length, left: result.left }).toEqual({
      payloads: [{ id: 1, note: 'héllo' }],
      parked: 0,
      left: 0,
    });
  });

  it('parks a JSON body sent as text/plain as malformed, naming the content type', async () => {
    const result = await deliver(Buffer.from('{"id":2}'), { contentType: 'text/plain' });
    expect({ calls: result.calls.length, parked: result.parked.length, left: result.left }).toEqual({ calls: 0, parked: 1, left: 0 });
    expect(headersOf(result.parked[0])).toMatchObject({ 'x-parked-reason': 'malformed', 'x-retry-attempts': 0 });
    expect(headersOf(result.parked[0])['x-exception-message']).toMatch(/content.?type/i);
  });

  it.each([
    ['application/json; charset=utf-8', 'application/json; charset=utf-8'],
    ['application/vnd.acme+json', 'application/vnd.acme+json'],
    ['no content type', undefined],
  ])('accepts a JSON body with %s', async (_, contentType) => {
    const result = await deliver(Buffer.from('{"id":3}'), { contentType });
    expect({ payloads: result.calls.map((c) => c.payload), parked: result.parked.length, left: result.left }).toEqual({
      payloads: [{ id: 3 }],
      parked: 0,
      left: 0,
    });
    expect(result.calls[0].properties.contentType).toBe(contentType);
  });

  it("deserializer: 'raw' hands the handler the body's bytes unchanged", async () => {
    const bytes = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x7b]);
    const result = await deliver(bytes, { contentType: 'application/octet-stream' }, { deserializer: 'raw' });
    expect({ calls: result.calls.length, parked: result.parked.length, left: result.left }).toEqual({ calls: 1, parked: 0, left: 0 });
    const payload = result.calls[0].payload;
    expect(Buffer.isBuffer(payload)).toBe(true);
    expect((payload as Buffer).equals(bytes)).toBe(true);
  });

  it('a deserializer function receives the content and the message, and the handler its result', async () => {
    const seen: Array<{ content: string; messageId: unknown }> = [];
    const deserializer = (content: Buffer, message: ConsumeMessage) => {
      seen.push({ content: content.toString('hex'), messageId: message.properties.messageId });
      return content.toString('latin1').toUpperCase();
    };
    const body = Buffer.from('caf\xe9 ol\xe9', 'latin1');
    const result = await deliver(body, { contentType: 'text/plain' }, { deserializer });
    expect(result.calls.map((c) => c.payload)).toEqual(['CAFÉ OLÉ']);
    expect(seen[0]).toEqual({ content: body.toString('hex'), messageId: 'under-test' });
    expect({ parked: result.parked.length, left: result.left }).toEqual({ parked: 0, left: 0 });
  });

  it('a deserializer that throws parks the message as malformed, without a handler call', async () => {
    const deserializer = (content: Buffer) => {
      if (content.toString() === 'poison') throw new Error('cannot decode poison');
      return JSON.parse(content.toString()) as unknown;
    };
    const result = await deliver(Buffer.from('poison'), {}, { deserializer });
    expect({ calls: result.calls.length, good: result.goodCalls, parked: result.parked.length, left: result.left }).toEqual({
      calls: 0,
      good: 1,
      parked: 1,
      left: 0,
    });
    expect(headersOf(result.parked[0])).toMatchObject({ 'x-parked-reason': 'malformed', 'x-retry-attempts': 0 });
    expect(headersOf(result.parked[0])['x-exception-message']).toContain('cannot decode poison');
  });

  it("RetryModule.forRoot({ deserializer: 'raw' }) applies to handlers without a deserializer of their own", async () => {
    const bytes = Buffer.from([0xc3, 0x28, 0xa0, 0xa1]);
    const result = await deliver(bytes, { contentType: 'application/octet-stream' }, {}, { deserializer: 'raw' });
    expect({ calls: result.calls.length, parked: result.parked.length, left: result.left }).toEqual({ calls: 1, parked: 0, left: 0 });
    expect(Buffer.isBuffer(result.calls[0].payload) && (result.calls[0].payload as Buffer).equals(bytes)).toBe(true);
  });
});
