import { isUtf8 } from 'node:buffer';
import type { ConsumeMessage } from 'amqplib';
import { errorMessage } from '../text/error-message.format.js';

/**
 * How a handler's message body becomes its payload (option `deserializer` of the module and of each handler):
 * - 'json' (default): the body must be UTF-8 JSON, its content type absent or JSON (`application/json`,
 *   `application/*+json`), and its content encoding no compression (a `gzip` or `deflate` body is parked naming its
 *   encoding); anything else is parked as malformed without calling the handler.
 * - 'raw': the payload is the body's Buffer, unchecked.
 * - a function: the payload is what it returns for the body and the whole delivery; if it throws, the message is
 *   parked as malformed. It must be synchronous: a returned Promise would be the payload.
 */
export type Deserializer = 'json' | 'raw' | ((content: Buffer, message: ConsumeMessage) => unknown);

/** The payload of a body, or why it has none. */
export type DecodedBody = { ok: true; payload: unknown } | { ok: false; problem: string };

/** The fix named by every content-type problem: the handler can take any body if told how. */
const DESERIALIZER_HINT = "give the handler a deserializer ('raw' or a function) to accept it";

/** `application/json`, or a structured-syntax JSON type such as `application/vnd.acme.order+json`. */
const JSON_MEDIA_TYPE = /^application\/(?:json|[^\s/;]+\+json)$/;

/** Quoted text for a problem sentence, cut so that a hostile header cannot make the sentence huge. */
const quoted = (text: string): string => JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}...` : text);

/**
 * Why a content type does not announce UTF-8 JSON, or undefined if it does. Media types and parameter names are
 * case-insensitive (RFC 9110); a charset other than UTF-8 is refused, since the body is read as UTF-8.
 */
export function jsonContentTypeProblem(contentType: string | undefined): string | undefined {
  if (contentType === undefined || contentType === 'application/json' || contentType.trim() === '') return undefined; // the usual cases, at once
  const [mediaType, ...parameters] = contentType.split(';').map((part) => part.trim());
  if (!JSON_MEDIA_TYPE.test(mediaType.toLowerCase())) return `content type ${quoted(contentType)} is not JSON; ${DESERIALIZER_HINT}`;
  for (const parameter of parameters) {
    const charset = /^charset\s*=\s*([\s\S]*)$/i
      .exec(parameter)?.[1]
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      return `content type ${quoted(contentType)} declares charset ${quoted(charset)}, but JSON bodies are read as UTF-8; publish UTF-8 or ${DESERIALIZER_HINT}`;
    }
  }
  return undefined;
}

/** Where a byte sequence first breaks UTF-8 (Unicode table 3-7: no overlongs, no surrogates, nothing past U+10FFFF). */
function utf8Fault(bytes: Uint8Array): string | undefined {
  const hex = (byte: number) => `0x${byte.toString(16).padStart(2, '0')}`;
  for (let i = 0; i < bytes.length;) {
    const lead = bytes[i];
    if (lead < 0x80) {
      i++;
      continue;
    }
    // [continuation bytes, bounds of the first continuation byte], by lead byte; other lead bytes are never valid.
    const shape: [number, number, number] | undefined =
      lead >= 0xc2 && lead <= 0xdf ? [1, 0x80, 0xbf]
      : lead === 0xe0 ? [2, 0xa0, 0xbf]
      : lead === 0xed ? [2, 0x80, 0x9f]
      : lead >= 0xe1 && lead <= 0xef ? [2, 0x80, 0xbf]
      : lead === 0xf0 ? [3, 0x90, 0xbf]
      : lead >= 0xf1 && lead <= 0xf3 ? [3, 0x80, 0xbf]
      : lead === 0xf4 ? [3, 0x80, 0x8f]
      : undefined; // prettier-ignore
    if (shape === undefined) return `byte ${hex(lead)} at offset ${i}`;
    const [continuations, low, high] = shape;
    for (let k = 1; k <= continuations; k++) {
      if (i + k >= bytes.length) return `the character starting at offset ${i} is cut off by the end of the body`;
      const byte = bytes[i + k];
      if (byte < (k === 1 ? low : 0x80) || byte > (k === 1 ? high : 0xbf)) return `byte ${hex(byte)} at offset ${i + k}`;
    }
    i += continuations + 1;
  }
  return undefined;
}

/** Content codings (RFC 9110 §8.4.1, the HTTP registry) that compress a body: JSON cannot be read from it as it is. */
const COMPRESSIONS: ReadonlySet<string> = new Set(['gzip', 'x-gzip', 'deflate', 'br', 'compress', 'x-compress', 'zstd']);

/** Content encodings that say nothing the 'json' deserializer must undo: none, or a name of UTF-8 (Spring AMQP writes "UTF-8"). */
const PLAIN_ENCODINGS: ReadonlySet<string> = new Set(['', 'identity', 'utf-8', 'utf8']);

/** Why a content encoding keeps the 'json' deserializer from reading the body: a compression is refused by name. */
export function jsonContentEncodingProblem(contentEncoding: string | undefined): string | undefined {
  if (typeof contentEncoding !== 'string') return undefined; // none, the usual case, at once
  const coding = contentEncoding.trim().toLowerCase();
  if (!COMPRESSIONS.has(coding)) return undefined;
  return (
    `body is compressed (content encoding ${quoted(contentEncoding)}), and the 'json' deserializer does not decompress; ` +
    'publish it uncompressed, or give the handler a deserializer function that decompresses it ' +
    '(e.g. (body) => JSON.parse(gunzipSync(body).toString()), with a limit on the size)'
  );
}

/** The end of a problem sentence naming an encoding the 'json' deserializer read the body through as if it were plain. */
function encodingNote(contentEncoding: string | undefined): string {
  const coding = contentEncoding?.trim().toLowerCase() ?? '';
  return PLAIN_ENCODINGS.has(coding)
    ? ''
    : ` (the message declares content encoding ${quoted(contentEncoding ?? '')}, which the 'json' deserializer does not undo)`;
}

const BOM = 0xfeff;
/** What Node's UTF-8 decoding puts in place of each ill-formed sequence. */
const REPLACEMENT = '\ufffd';

/**
 * Decodes a body as the 'json' deserializer does: a JSON content type (or none), no compression, strict UTF-8 (a
 * leading byte-order mark dropped), JSON text. Never throws. The bytes are decoded leniently first: only a text that
 * holds U+FFFD (Node's replacement for an ill-formed sequence) has its bytes checked by `isUtf8`, which the usual
 * ASCII text never costs.
 */
export function decodeJsonBody(content: Buffer, contentType: string | undefined, contentEncoding?: string): DecodedBody {
  const contentProblem = jsonContentTypeProblem(contentType) ?? jsonContentEncodingProblem(contentEncoding);
  if (contentProblem !== undefined) return { ok: false, problem: contentProblem };
  const decoded = content.toString('utf8');
  if (decoded.includes(REPLACEMENT) && !isUtf8(content)) {
    const fault = utf8Fault(content);
    return { ok: false, problem: `body is not valid UTF-8${fault === undefined ? '' : ` (${fault})`}${encodingNote(contentEncoding)}` };
  }
  const text = decoded.charCodeAt(0) === BOM ? decoded.slice(1) : decoded;
  try {
    return { ok: true, payload: JSON.parse(text) };
  } catch (error) {
    if (text.trim() === '') return { ok: false, problem: `body is not valid JSON: it is ${text === '' ? 'empty' : 'only whitespace'}` };
    return { ok: false, problem: `body is not valid JSON: ${errorMessage(error)}${encodingNote(contentEncoding)}` };
  }
}

/** A property amqplib decoded as a string, else undefined. */
const textOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/**
 * Turns a delivery's body into the handler's payload with the given deserializer, or says why it cannot. Never throws,
 * so a bad body is parked, never retried: it would fail the same way on every attempt.
 */
export function decodeBody(message: ConsumeMessage, deserializer: Deserializer = 'json'): DecodedBody {
  if (deserializer === 'json') {
    const { contentType, contentEncoding } = message.properties as { contentType: unknown; contentEncoding: unknown }; // amqplib types them as any
    return decodeJsonBody(message.content, textOf(contentType), textOf(contentEncoding));
  }
  if (deserializer === 'raw') return { ok: true, payload: message.content };
  if (typeof deserializer !== 'function') {
    // Only reachable from JavaScript or a cast; said here too so that a typo parks with a clear reason.
    const given: unknown = deserializer;
    const shown = typeof given === 'string' ? quoted(given) : `a ${typeof given}`;
    return { ok: false, problem: `the deserializer is ${shown}; use 'json', 'raw' or a function` };
  }
  try {
    return { ok: true, payload: deserializer(message.content, message) };
  } catch (error) {
    return { ok: false, problem: `the deserializer threw: ${errorMessage(error)}` };
  }
}
