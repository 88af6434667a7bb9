import { patternAsString, readPacket, readReply } from './rpc.packet.js';

const text = (p: unknown) => (typeof p === 'string' ? p : JSON.stringify(p));
const key = { routingKey: 'orders' };

describe('readPacket', () => {
  it("reads Nest's event envelope", () => {
    expect(readPacket({ pattern: 'order.created', data: { id: 1 } }, key, text)).toEqual({
      kind: 'event',
      pattern: 'order.created',
      data: { id: 1 },
    });
  });

  it('reads an envelope whose data was undefined (JSON drops the key)', () => {
    expect(readPacket({ pattern: 'ping' }, key, text)).toEqual({ kind: 'event', pattern: 'ping', data: undefined });
  });

  it('gives an object pattern its JSON text', () => {
    expect(readPacket({ pattern: { cmd: 'sum' }, data: [1, 2] }, key, text)).toMatchObject({ pattern: '{"cmd":"sum"}' });
  });

  it('reads a request: envelope id and replyTo, correlation id from the property', () => {
    const packet = readPacket(
      { pattern: 'order.get', data: 7, id: 'abc' },
      { ...key, replyTo: 'amq.rabbitmq.reply-to.x', correlationId: 'c-1' },
      text,
    );
    expect(packet).toEqual({ kind: 'request', pattern: 'order.get', data: 7, id: 'abc', replyTo: 'amq.rabbitmq.reply-to.x', correlationId: 'c-1' });
  });

  it('falls back to the envelope id as correlation id', () => {
    expect(readPacket({ pattern: 'p', data: 1, id: 'abc' }, { ...key, replyTo: 'r' }, text)).toMatchObject({ kind: 'request', correlationId: 'abc' });
  });

  it('treats a request nobody could answer as an event', () => {
    expect(readPacket({ pattern: 'p', data: 1, id: 'abc' }, key, text)).toEqual({ kind: 'event', pattern: 'p', data: 1 });
    expect(readPacket({ pattern: 'p', data: 1 }, { ...key, replyTo: 'r' }, text)).toEqual({ kind: 'event', pattern: 'p', data: 1 });
    expect(readPacket({ pattern: 'p', data: 1, id: '' }, { ...key, replyTo: 'r' }, text).kind).toBe('event');
    expect(readPacket({ pattern: 'p', data: 1, id: null }, { ...key, replyTo: 'r' }, text).kind).toBe('event');
  });

  it("reads a numeric envelope id as a request, as Nest's ServerRMQ does, echoing the number and correlating by its text", () => {
    expect(readPacket({ pattern: 'p', data: 1, id: 7 }, { ...key, replyTo: 'r' }, text)).toEqual({
      kind: 'request',
      pattern: 'p',
      data: 1,
      id: 7,
      replyTo: 'r',
      correlationId: '7',
    });
    expect(readPacket({ pattern: 'p', data: 1, id: Number.NaN }, { ...key, replyTo: 'r' }, text).kind).toBe('event');
  });

  it("reads the metadata Nest 12's dispatch hook adds to an event and to a request", () => {
    const metadata = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    expect(readPacket({ pattern: 'order.created', data: 1, metadata }, key, text)).toEqual({
      kind: 'event',
      pattern: 'order.created',
      data: 1,
      metadata,
    });
    expect(readPacket({ pattern: 'sum', data: [1, 2], id: 'abc', metadata }, { ...key, replyTo: 'r' }, text)).toEqual({
      kind: 'request',
      pattern: 'sum',
      data: [1, 2],
      id: 'abc',
      replyTo: 'r',
      correlationId: 'abc',
      metadata,
    });
  });

  it('dispatches a body without the envelope by its routing key, whole', () => {
    const bodies = [
      { id: 1, total: 5 },
      { pattern: 'p', data: 1, extra: true },
      { pattern: 'p', data: 1, metadata: 'not an object' },
      { pattern: 'p', data: 1, metadata: [1] },
      { data: 1, metadata: {} },
      [1, 2],
      'text',
      42,
      null,
      Buffer.from('x'),
    ];
    for (const body of bodies) {
      expect(readPacket(body, { routingKey: 'order.created' }, text)).toEqual({ kind: 'event', pattern: 'order.created', data: body });
    }
  });
});

describe('patternAsString', () => {
  it('keeps a string and writes anything else as JSON, as Nest 11+ does', () => {
    expect(patternAsString('order.created')).toBe('order.created');
    expect(patternAsString({ cmd: 'sum' })).toBe('{"cmd":"sum"}');
  });

  it('reads a pattern JSON.stringify cannot write as a key no handler has, without throwing', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(patternAsString(cyclic)).toBe('<unserializable pattern>');
    expect(patternAsString({ n: 1n })).toBe('<unserializable pattern>');
  });

  it('reads a pattern nested 20,000 deep without throwing: too deep for JSON.stringify up to Node 24, written whole by 26', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 20_000; i++) deep = { p: deep };
    expect(['<unserializable pattern>', `${'{"p":'.repeat(20_000)}1${'}'.repeat(20_000)}`]).toContain(patternAsString(deep));
  });
});

describe('readReply', () => {
  it("reads Nest's reply packet", () => {
    expect(readReply(Buffer.from('{"response":{"id":1},"isDisposed":true}'))).toEqual({ response: { id: 1 }, isDisposed: true });
    expect(readReply(Buffer.from('{"err":"no","isDisposed":true}'))).toEqual({ err: 'no', isDisposed: true });
  });

  it.each([
    ['JSON null', 'null', /not a Nest packet/],
    ['a number', '42', /not a Nest packet/],
    ['a string', '"ok"', /not a Nest packet/],
    ['an array', '[1]', /not a Nest packet/],
    ['text that is not JSON', '{"response":', /unreadable reply/],
  ])('turns %s into a disposing error', (_, body, message) => {
    const reply = readReply(Buffer.from(body));
    expect(reply.isDisposed).toBe(true);
    expect(String((reply.err as Error).message)).toMatch(message);
  });
});
