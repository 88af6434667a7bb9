import { deflateSync, gzipSync } from 'node:zlib';
import type { ConsumeMessage, MessageProperties } from 'amqplib';
import { decodeBody, type Deserializer, jsonContentTypeProblem } from './body.decoder.js';
import { seededRandom } from '../../testing/seeded-random.fixture.js';

const message = (content: Buffer | string, properties: Partial<MessageProperties> = {}): ConsumeMessage => ({
  content: typeof content === 'string' ? Buffer.from(content) : content,
  fields: { deliveryTag: 1, redelivered: false, exchange: 'shop', routingKey: 'order.created', consumerTag: 'c' },
  properties: { headers: {}, ...properties } as MessageProperties,
});

const problem = (m: ConsumeMessage, deserializer?: Deserializer) => {
  const decoded = decodeBody(m, deserializer);
  return decoded.ok ? undefined : decoded.problem;
};

describe("decodeBody with 'json'", () => {
  it('is the default and parses the body', () => {
    expect(decodeBody(message('{"id":7,"name":"Zoë"}'))).toEqual({ ok: true, payload: { id: 7, name: 'Zoë' } });
    expect(decodeBody(message('[1,2]'), 'json')).toEqual({ ok: true, payload: [1, 2] });
    expect(decodeBody(message(' null '))).toEqual({ ok: true, payload: null });
  });

  it.each([
    [undefined],
    [''],
    ['  '],
    ['application/json'],
    ['Application/JSON'],
    ['application/json; charset=utf-8'],
    ['application/json;charset=UTF-8'],
    ['application/json; charset="utf-8"'],
    ['application/json; CHARSET=utf8'],
    ['application/json; version=2'],
    ['application/vnd.acme.order+json'],
    ['application/problem+json; charset=utf-8'],
    ['application/cloudevents+json'],
  ])('accepts content type %p', (contentType) => {
    expect(jsonContentTypeProblem(contentType)).toBeUndefined();
    expect(decodeBody(message('{"a":1}', { contentType }))).toEqual({ ok: true, payload: { a: 1 } });
  });

  it.each([
    ['text/plain', 'content type "text/plain" is not JSON'],
    ['application/xml', 'content type "application/xml" is not JSON'],
    ['application/jsonp', 'content type "application/jsonp" is not JSON'],
    ['application/+json', 'content type "application/+json" is not JSON'],
    ['text/json', 'content type "text/json" is not JSON'],
    ['application/octet-stream', 'content type "application/octet-stream" is not JSON'],
    ['json', 'content type "json" is not JSON'],
    ['application/x-protobuf; messageType=Order', 'content type "application/x-protobuf; messageType=Order" is not JSON'],
  ])('refuses content type %p, naming the fix', (contentType, start) => {
    expect(problem(message('{"a":1}', { contentType }))).toBe(`${start}; give the handler a deserializer ('raw' or a function) to accept it`);
  });

  it.each([['application/json; charset=iso-8859-1'], ['application/json; charset=utf-16'], ['application/json; charset="latin1"']])(
    'refuses %p: the body is read as UTF-8',
    (contentType) => {
      expect(problem(message('{}', { contentType }))).toMatch(
        /^content type ".*" declares charset ".*", but JSON bodies are read as UTF-8; publish UTF-8 or give the handler a deserializer/,
      );
    },
  );

  it('cuts a huge content type in the problem', () => {
    const text = problem(message('{}', { contentType: `text/${'x'.repeat(10_000)}` })) ?? '';
    expect(text.length).toBeLessThan(250);
  });

  it.each([
    ['gzip', gzipSync('{"id":1}')],
    ['deflate', deflateSync('{"id":1}')],
    [' GZip ', gzipSync('{"id":1}')],
    ['br', Buffer.from('{"id":1}')],
  ])('refuses a body compressed with %j by naming its encoding, whatever its bytes', (encoding, body) => {
    expect(problem(message(body, { contentType: 'application/json', contentEncoding: encoding }))).toBe(
      `body is compressed (content encoding ${JSON.stringify(encoding)}), and the 'json' deserializer does not decompress; ` +
        'publish it uncompressed, or give the handler a deserializer function that decompresses it ' +
        '(e.g. (body) => JSON.parse(gunzipSync(body).toString()), with a limit on the size)',
    );
  });

  it.each([[undefined], ['identity'], ['UTF-8'], ['utf8']])('reads a body whose content encoding is %j as plain JSON', (encoding) => {
    expect(decodeBody(message('{"id":1}', { contentEncoding: encoding }))).toEqual({ ok: true, payload: { id: 1 } });
  });

  it('names any other content encoding when the body cannot be read', () => {
    expect(decodeBody(message('{"id":1}', { contentEncoding: 'base64' }))).toEqual({ ok: true, payload: { id: 1 } });
    expect(problem(message('eyJpZCI6MX0=', { contentEncoding: 'base64' }))).toMatch(
      /^body is not valid JSON: .+ \(the message declares content encoding "base64", which the 'json' deserializer does not undo\)$/,
    );
    expect(problem(message(Buffer.from([0x7b, 0xe9, 0x7d]), { contentEncoding: 'latin1' }))).toBe(
      `body is not valid UTF-8 (byte 0x7d at offset 2) (the message declares content encoding "latin1", which the 'json' deserializer does not undo)`,
    );
  });

  it('strips a leading UTF-8 byte-order mark', () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]);
    expect(decodeBody(message(body))).toEqual({ ok: true, payload: { a: 1 } });
  });

  it.each<[string, number[], string]>([
    ['a 0xff byte', [0x7b, 0x22, 0x61, 0xff, 0x22, 0x7d], 'byte 0xff at offset 3'],
    ['a lone continuation byte', [0x22, 0x80, 0x22], 'byte 0x80 at offset 1'],
    ['an overlong encoding', [0xc0, 0xaf], 'byte 0xc0 at offset 0'],
    ['an overlong three-byte form', [0x20, 0xe0, 0x80, 0xaf], 'byte 0x80 at offset 2'],
    ['a surrogate', [0x22, 0xed, 0xa0, 0x80, 0x22], 'byte 0xa0 at offset 2'],
    ['a code point past U+10FFFF', [0xf4, 0x90, 0x80, 0x80], 'byte 0x90 at offset 1'],
    ['a bad later continuation byte', [0xe2, 0x82, 0x41], 'byte 0x41 at offset 2'],
    ['a character cut off', [0x22, 0x61, 0xe2, 0x82], 'the character starting at offset 2 is cut off by the end of the body'],
    ['latin-1 text', [...Buffer.from('{"name":"Zo', 'latin1'), 0xeb, ...Buffer.from('"}')], 'byte 0x22 at offset 12'],
    ['a UTF-16 byte-order mark', [0xff, 0xfe, 0x7b, 0x00], 'byte 0xff at offset 0'],
  ])('refuses %s as not UTF-8, naming the byte', (_, bytes, fault) => {
    expect(problem(message(Buffer.from(bytes)))).toBe(`body is not valid UTF-8 (${fault})`);
  });

  it('accepts valid UTF-8 that encodes U+FFFD itself, and refuses the same text with a bad byte beside it', () => {
    expect(decodeBody(message(Buffer.from('{"a":"\ufffd"}')))).toEqual({ ok: true, payload: { a: '\ufffd' } });
    const bad = Buffer.concat([Buffer.from('{"a":"\ufffd'), Buffer.from([0xff]), Buffer.from('"}')]);
    expect(problem(message(bad))).toBe('body is not valid UTF-8 (byte 0xff at offset 9)');
  });

  it('finds a fault exactly when the strict decoder does, over 20,000 random byte strings', () => {
    const next = seededRandom(7);
    const strict = new TextDecoder('utf-8', { fatal: true });
    const disagreements: number[][] = [];
    let invalid = 0;
    for (let trial = 0; trial < 20_000; trial++) {
      // Mostly valid text with a few random bytes, so that both outcomes are common.
      const text = Buffer.from(String.fromCodePoint(...Array.from({ length: 1 + (trial % 6) }, () => Math.floor(next() * 0x10ffff) & ~0x800)));
      const bytes = Buffer.from(text.map((byte) => (next() < 0.1 ? Math.floor(next() * 256) : byte)));
      let valid = true;
      try {
        strict.decode(bytes);
      } catch {
        valid = false;
      }
      const found = problem(message(bytes));
      const saysUtf8 = found?.startsWith('body is not valid UTF-8 (') ?? false;
      if (valid === saysUtf8) disagreements.push([...bytes]);
      if (!valid) invalid++;
    }
    expect(disagreements).toEqual([]);
    expect(invalid).toBeGreaterThan(2_000); // both outcomes are well represented
    expect(invalid).toBeLessThan(18_000);
  });

  it.each([
    ['an empty body', '', 'body is not valid JSON: it is empty'],
    ['whitespace', ' \n\t', 'body is not valid JSON: it is only whitespace'],
    ['a byte-order mark alone', '\ufeff', 'body is not valid JSON: it is empty'],
  ])('refuses %s', (_, body, expected) => {
    expect(problem(message(body))).toBe(expected);
  });

  it.each([['{"id": 7'], ['undefined'], ["{'a':1}"], ['NaN'], ['{"a":1}}'], ['\u0000']])(
    'refuses %p as not JSON, with the parser message',
    (body) => {
      expect(problem(message(body))).toMatch(/^body is not valid JSON: \S/);
    },
  );

  it('refuses deep nesting without throwing', () => {
    expect(() => decodeBody(message('['.repeat(1_000_000)))).not.toThrow();
    expect(problem(message('['.repeat(1_000_000)))).toMatch(/^body is not valid JSON: /);
  });

  it('parses __proto__ as a plain key, not a prototype', () => {
    const decoded = decodeBody(message('{"__proto__":{"polluted":true}}'));
    expect(decoded.ok && Object.getPrototypeOf(decoded.payload)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("decodeBody with 'raw'", () => {
  it('gives the body itself, whatever its bytes and content type', () => {
    const m = message(Buffer.from([0xff, 0x00, 0xfe]), { contentType: 'application/octet-stream' });
    const decoded = decodeBody(m, 'raw');
    expect(decoded.ok && decoded.payload).toBe(m.content);
    expect(decodeBody(message(''), 'raw')).toEqual({ ok: true, payload: Buffer.alloc(0) });
  });
});

describe('decodeBody with a function', () => {
  it('gives what the function returns for the body and the delivery, content type unchecked', () => {
    const m = message('a=1', { contentType: 'text/plain' });
    const calls: unknown[][] = [];
    const deserializer = (content: Buffer, delivery: ConsumeMessage) => {
      calls.push([content, delivery]);
      return { text: content.toString(), key: delivery.fields.routingKey };
    };
    expect(decodeBody(m, deserializer)).toEqual({ ok: true, payload: { text: 'a=1', key: 'order.created' } });
    expect(calls).toEqual([[m.content, m]]);
    expect(calls[0][1]).toBe(m);
  });

  it('passes undefined on as a payload', () => {
    expect(decodeBody(message('x'), () => undefined)).toEqual({ ok: true, payload: undefined });
  });

  it.each<[string, unknown, string]>([
    ['an Error', new Error('bad protobuf'), 'bad protobuf'],
    ['a string', 'nope', 'nope'],
    ['undefined', undefined, 'undefined'],
    ['an object without a string form', Object.create(null), '[object without a string form]'],
  ])('says the deserializer threw %s', (_, thrown, text) => {
    const throwing = () => {
      throw thrown;
    };
    expect(problem(message('x'), throwing)).toBe(`the deserializer threw: ${text}`);
  });

  it('names an unknown deserializer (from JavaScript) instead of throwing', () => {
    expect(problem(message('{}'), 'xml' as Deserializer)).toBe(`the deserializer is "xml"; use 'json', 'raw' or a function`);
    expect(problem(message('{}'), 42 as unknown as Deserializer)).toBe(`the deserializer is a number; use 'json', 'raw' or a function`);
  });
});
