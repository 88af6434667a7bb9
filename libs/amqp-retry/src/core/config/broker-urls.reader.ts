import { RetryConfigError } from '../../errors/retry-config.error.js';
import { refuseHoles } from './config.readers.js';
import { maskUrl } from '../text/credentials.mask.js';

/** How a list of URLs is written in AMQP_URL, for error messages. */
const LIST_EXAMPLE = 'amqp://user:password@host1:5672,amqp://user:password@host2:5672';

function shown(value: unknown): string {
  if (typeof value === 'string') return `"${maskUrl(value)}"`;
  return Array.isArray(value) && value.length === 0 ? 'an empty list' : String(value); // never a list: it may hold passwords
}

/** The fix for a user or password holding a character a URL ends its host part at. */
export const ENCODE_CREDENTIALS_FIX =
  "Percent-encode the user and password (encodeURIComponent): '/' is %2F, '?' %3F, '#' %23, '@' %40, ':' %3A, '%' %25; an '@' in a vhost is %40.";

/**
 * What is wrong with a string that should be an AMQP URL, or undefined. A `/`, `?` or `#` before the last `@` (a
 * password not percent-encoded) ends the host part early, so it is named as such rather than as "not an AMQP URL".
 */
export function amqpUrlProblem(url: string): { problem: string; fix?: string } | undefined {
  const scheme = /^amqps?:\/\//i.exec(url);
  const at = url.lastIndexOf('@');
  if (scheme && at > 0 && /[/?#]/.test(url.slice(scheme[0].length, at))) {
    return { problem: "has a '/', '?' or '#' before its last '@', so its user or password is not percent-encoded", fix: ENCODE_CREDENTIALS_FIX };
  }
  try {
    const parsed = new URL(url);
    if ((parsed.protocol === 'amqp:' || parsed.protocol === 'amqps:') && parsed.hostname !== '') return undefined;
  } catch {
    // not a URL at all
  }
  return { problem: 'is not an AMQP URL' };
}

/** Reads one broker URL (the `url` option); a list written into it is pointed at `urls`. */
export function readUrl(value: unknown, key: string): string {
  if (typeof value === 'string' && /,\s*amqps?:\/\//i.test(value)) {
    throw new RetryConfigError(key, `is ${shown(value)}, a list`, 'Give the nodes of a cluster as the option "urls", an array of AMQP URLs.');
  }
  const wrong = typeof value === 'string' ? amqpUrlProblem(value) : { problem: 'is not an AMQP URL' };
  if (wrong?.fix) throw new RetryConfigError(key, `is ${shown(value)}, which ${wrong.problem}`, wrong.fix);
  if (wrong) throw new RetryConfigError(key, `is ${shown(value)}`, 'Use an AMQP URL such as amqp://user:password@host:5672/vhost.');
  return value as string;
}

/** Reads a list of distinct AMQP URLs: `urls` (an array) or AMQP_URL (comma-separated; a comma in a password is %2C). */
export function readUrlList(value: unknown, key: string): string[] {
  const fromEnv = typeof value === 'string';
  const entries = fromEnv ? value.split(',').map((entry) => entry.trim()) : value;
  const fix = fromEnv
    ? `Separate AMQP URLs with commas, e.g. ${LIST_EXAMPLE} (a comma inside a password is written %2C).`
    : `Give an array of AMQP URLs, e.g. ['amqp://user:password@host1:5672', 'amqp://user:password@host2:5672'].`;
  if (!Array.isArray(entries) || entries.length === 0) throw new RetryConfigError(key, `is ${shown(value)}`, fix);
  refuseHoles(entries, key, 'URL', "['amqp://user:password@host1:5672', 'amqp://user:password@host2:5672']");
  entries.forEach((entry: unknown, i) => {
    const wrong = typeof entry === 'string' ? amqpUrlProblem(entry) : { problem: 'is not an AMQP URL' };
    if (wrong) throw new RetryConfigError(key, `has ${shown(entry)} as entry ${i + 1}, which ${wrong.problem}`, wrong.fix ?? fix);
    if (entries.indexOf(entry) !== i) throw new RetryConfigError(key, `lists ${shown(entry)} twice`, 'List each node once.');
  });
  return entries as string[];
}

/**
 * The node to try at reconnection attempt `attempt` (1, 2, ...) after losing node `lostIndex` of `count`: the next one,
 * then round-robin, the lost node last (the least likely to answer), so that clients that lost it spread over the rest.
 */
export function nodeForAttempt(lostIndex: number, attempt: number, count: number): number {
  return (lostIndex + attempt) % count;
}

/** Names a node for the logs: its URL with the password masked, and its place in the list when there are several. */
export function describeNode(urls: readonly string[], index: number): string {
  const url = maskUrl(urls[index]);
  return urls.length > 1 ? `${url} (node ${index + 1} of ${urls.length})` : url;
}

/** Where the broker is when nothing says otherwise. */
export const DEFAULT_URL = 'amqp://guest:guest@localhost:5672';

/** What a caller was given to find the broker: one URL (`url`) or the nodes of a cluster (`urls`). */
export interface BrokerUrlOptions {
  url?: unknown;
  urls?: unknown;
}

/**
 * Where the broker is, for every caller (RetryModule, ParkedMessages, the CLI): `urls`, else `url`, else AMQP_URL (one
 * URL or a comma-separated list), else DEFAULT_URL. `owner` names the options in errors. `listInUrl`: `url` may be a
 * comma-separated list and trailing commas are ignored (ParkedMessages' `url`, the CLI's --url).
 */
export function readBrokerUrls(given: BrokerUrlOptions, amqpUrl: string | undefined, owner: string, listInUrl = false): string[] {
  if (given.url !== undefined && given.urls !== undefined) {
    throw new RetryConfigError(
      `${owner} options "url" and "urls"`,
      'are both set',
      'Give one: "urls" for the nodes of a cluster, "url" for one broker.',
    );
  }
  if (given.urls !== undefined) return readUrlList(given.urls, `${owner} option "urls"`);
  if (given.url !== undefined) {
    const key = `${owner} option "url"`;
    return listInUrl && typeof given.url === 'string' ? readUrlText(given.url, key, true) : [readUrl(given.url, key)];
  }
  if (amqpUrl === undefined || amqpUrl.trim() === '') return [DEFAULT_URL];
  return readUrlText(amqpUrl, 'environment variable AMQP_URL', listInUrl);
}

/** One URL, or a comma-separated list of them. */
function readUrlText(text: string, key: string, ignoreTrailingCommas: boolean): string[] {
  const raw = ignoreTrailingCommas ? text.trim().replace(/,+$/, '') : text;
  return raw.includes(',') ? readUrlList(raw, key) : [readUrl(raw.trim(), key)];
}

/** The user name of a broker URL (amqplib's default, guest, without one): who its connection publishes as. */
export function brokerUser(url: string | undefined): string {
  try {
    const user = url ? decodeURIComponent(new URL(url).username) : '';
    return user === '' ? 'guest' : user;
  } catch {
    return 'guest';
  }
}

/** The distinct broker users of `urls`: an application's own users, whichever node it is on. */
export const brokerUsers = (urls: readonly string[]): string[] => [...new Set(urls.map(brokerUser))];
