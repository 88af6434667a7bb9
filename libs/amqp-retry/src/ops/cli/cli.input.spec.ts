import { CliUsageError } from '../../errors/cli-usage.error.js';
import { clip, narrows, printable, readCount, readFilter, readScope, readUrlFlag, wantsProgress } from './cli.input.js';

describe('readFilter', () => {
  it('turns the flags into a filter, times as dates', () => {
    expect(
      readFilter({ queue: 'orders', reason: 'exhausted', error: 'card', text: 'acme', since: '2026-01-01T00:00:00Z', until: '1767312000000' }),
    ).toEqual({
      queue: 'orders',
      reason: 'exhausted',
      error: 'card',
      text: 'acme',
      since: new Date('2026-01-01T00:00:00Z'),
      until: new Date(1767312000000),
    });
    expect(readFilter({})).toEqual({});
  });

  it('names the option of a bad time and the fix', () => {
    expect(() => readFilter({ since: 'yesterday' })).toThrow(CliUsageError);
    expect(() => readFilter({ until: 'soon' })).toThrow(/--until is "soon", not a time\. Give an ISO time/);
    expect(() => readFilter({ since: '2026-02-01', until: '2026-01-01' })).toThrow(/--since is not before --until/);
  });
});

describe('narrows', () => {
  it('is false for no filter or the queue alone', () => {
    expect(narrows({})).toBe(false);
    expect(narrows({ queue: 'q' })).toBe(false);
    expect(narrows({ queue: 'q', reason: 'malformed' })).toBe(true);
  });
});

describe('readCount', () => {
  it('reads whole numbers from the minimum up', () => {
    expect(readCount('--limit', undefined, 50, 1)).toBe(50);
    expect(readCount('--limit', '7', 50, 1)).toBe(7);
    expect(() => readCount('--limit', '0', 50, 1)).toThrow(/--limit is "0"\. Give a whole number of at least 1/);
    expect(() => readCount('--offset', '-1', 0)).toThrow(CliUsageError);
    expect(() => readCount('--offset', '1.5', 0)).toThrow(CliUsageError);
  });
});

describe('readUrlFlag', () => {
  it('names a password that is not percent-encoded, masked, instead of amqplib\'s "Expected amqp:"', () => {
    expect(() => readUrlFlag('amqp://app:pa/ss@rabbit:5672', '--url')).toThrow(CliUsageError);
    expect(() => readUrlFlag('amqp://app:pa/ss@rabbit:5672', '--url')).toThrow(
      `--url is "amqp://app:***@rabbit:5672", which has a '/', '?' or '#' before its last '@', so its user or password is not percent-encoded.`,
    );
    expect(() => readUrlFlag('amqp://h1,http://u:secret@h2', 'AMQP_URL')).toThrow(/^AMQP_URL is "http:\/\/u:\*\*\*@h2", which is not an AMQP URL/);
    expect(readUrlFlag('amqp://u:p%2Fss@h1, amqp://h2', '--url')).toBe('amqp://u:p%2Fss@h1, amqp://h2');
    expect(readUrlFlag(undefined, '--url')).toBeUndefined();
  });
});

describe('printable', () => {
  it('escapes terminal control characters, keeping newlines and tabs only when multiline', () => {
    expect(printable('red \u001b[31mtext\u0007')).toBe('red \\u001b[31mtext\\u0007');
    expect(printable('a\nb\tc')).toBe('a\\u000ab\\u0009c');
    expect(printable('a\nb\tc\u009b', true)).toBe('a\nb\tc\\u009b');
    expect(printable('héllo <script>')).toBe('héllo <script>');
  });
});

describe('wantsProgress and clip', () => {
  it('shows a bar only on a terminal without --json', () => {
    expect(wantsProgress(true, false)).toBe(true);
    expect(wantsProgress(true, true)).toBe(false);
    expect(wantsProgress(false, false)).toBe(false);
    expect(wantsProgress(undefined, false)).toBe(false);
  });

  it('clips long text with an ellipsis', () => {
    expect(clip('abcdef', 4)).toBe('abc…');
    expect(clip('abc', 4)).toBe('abc');
  });
});

describe('readScope', () => {
  it('looks at what the command line names, and at nothing else', () => {
    expect(readScope({ queue: 'q' })).toEqual({ queues: [{ queue: 'q', errorQueue: undefined }] });
    expect(readScope({ queue: 'q', errorQueue: 'q.parked' })).toEqual({ queues: [{ queue: 'q', errorQueue: 'q.parked' }] });
    expect(readScope({ app: 'orders-service', queue: 'q' })).toEqual({ application: 'orders-service' }); // the queue must be the app's
    expect(readScope({ wholeVhost: true })).toEqual({ wholeVhost: true, queues: [] });
    expect(readScope({ errorQueue: 'q.parked' })).toEqual({ wholeVhost: true }); // the parking queue named is acted on alone
  });

  it('is a usage error when the command line names nothing, naming the three ways', () => {
    expect(() => readScope({})).toThrow(CliUsageError);
    expect(() => readScope({})).toThrow(/--app <name>.*--queue <queue>.*--whole-vhost/);
    expect(() => readScope({ app: ' ' })).toThrow(/--app is empty/);
  });
});
