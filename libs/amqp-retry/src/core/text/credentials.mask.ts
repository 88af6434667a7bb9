import type { RetryLogger } from '../observe/retry.logger.js';
import { printable } from './printable.js';

/**
 * The library's one masker of credentials, for every text that leaves the process. It does not parse URLs: a generated
 * password with an unencoded `/`, `@` or `:` would break the parse. It masks from the first `:` after the user to the
 * LAST `@` before the next whitespace, which may mask more than the password, never less.
 */

/** `scheme://user:password@`: the user may be empty (`redis://:pw@host`); the password runs to the last `@`. */
const URL_CREDENTIALS = /([a-z][a-z0-9+.-]*:\/\/)([^\s:/]*?):\S*@/gi;
/** The same in one value (a configured URL): the password runs to the last `@` of the value, whitespace included. */
const URL_CREDENTIALS_IN_VALUE = /^(\s*[a-z][a-z0-9+.-]*:\/\/)([^\s:/]*?):[\s\S]*@/i;
/**
 * `user:password@host` without a scheme (a driver's error quoting its target): a user of URL characters after a
 * boundary, a password without whitespace or `/` (so that `file:///…/@scope/…` in a stack trace is left alone).
 */
const BARE_CREDENTIALS = /(^|[\s"'(<[{=,;])([^\s:@/"'()<>[\]{}=,;]+):(?!\/\/)[^\s/]*@(?=[^\s@/])/gu;
/** `password=…` and the like, as in query strings and connection strings. */
const SECRET_PAIRS = /\b(password|passwd|pwd|secret|token|api[-_]?key)=([^&\s]+)/gi;

export const MASK = '***';

/**
 * Masks every password in a text (or a single URL): `amqp://user:***@host:5672/vh`, `user:***@host`,
 * `password=***`. Texts without credentials come back unchanged.
 * @example maskCredentials('amqp://app:pa/ss@rabbit:5672') // 'amqp://app:***@rabbit:5672'
 */
export function maskCredentials(text: string): string {
  if (!text.includes('@') && !text.includes('=')) return text; // the common case costs two scans
  return text
    .replace(URL_CREDENTIALS, `$1$2:${MASK}@`)
    .replace(BARE_CREDENTIALS, (_whole, before: string, user: string) => `${before}${user}:${MASK}@`)
    .replace(SECRET_PAIRS, `$1=${MASK}`);
}

/**
 * Masks one configured value that should be a URL: like maskCredentials, and also a password holding whitespace,
 * since the whole value is one URL. For configuration errors, which echo what the user gave.
 * @example maskUrl('amqp://app:two words@rabbit') // 'amqp://app:***@rabbit'
 */
export function maskUrl(value: string): string {
  return maskCredentials(value.replace(URL_CREDENTIALS_IN_VALUE, `$1$2:${MASK}@`));
}

/** `scheme://user:password@` at the start of one URL: the password runs to the last `@` of the URL. */
const URL_PASSWORD = /^\s*[a-z][a-z0-9+.-]*:\/\/[^\s:/]*?:([^\s/?#]*)@/i; // up to the authority's last @, as URL parsers read it

/**
 * The passwords of the broker URLs a tool was given (one URL, or a cluster's comma-separated), as written and
 * percent-decoded: what maskGivenPasswords masks.
 */
export function givenPasswords(urls: string | undefined): string[] {
  const found = new Set<string>();
  for (const url of (urls ?? '').split(',')) {
    const password = URL_PASSWORD.exec(url)?.[1];
    if (!password) continue;
    found.add(password);
    try {
      found.add(decodeURIComponent(password));
    } catch {
      // not percent-encoded as a URL would be: the password as written is masked
    }
  }
  return [...found];
}

/**
 * Masks the given passwords where they stand as a URL's (`:<password>@`), and nothing else: for output that carries
 * message data (an export, JSON), which must come out as it is, yet never a URL of the broker the tool was given.
 * @example maskGivenPasswords('amqp://app:pw@rabbit {"token=1"}', ['pw']) // 'amqp://app:***@rabbit {"token=1"}'
 */
export function maskGivenPasswords(text: string, passwords: readonly string[]): string {
  let masked = text;
  for (const password of passwords) masked = masked.split(`:${password}@`).join(`:${MASK}@`);
  return masked;
}

/** A log line's text: credentials masked, control characters escaped (see printable); its newlines kept (a stack). */
export const logText = (message: string): string => printable(maskCredentials(message), true);

/**
 * A logger whose every line is masked and printable (logText): what the library logs may quote a URL, an error text or
 * a body (a parse error quotes it), and a body's escape sequences must not reach an operator's terminal.
 */
export function maskingLogger(logger: RetryLogger): RetryLogger {
  return {
    log: (message) => logger.log(logText(message)),
    warn: (message) => logger.warn(logText(message)),
    error: (message) => logger.error(logText(message)),
    debug: (message) => logger.debug(logText(message)),
  };
}
