import { givenPasswords, maskCredentials, maskGivenPasswords, maskingLogger, maskUrl } from './credentials.mask.js';

/** Passwords a generator or a person may choose, none of them percent-encoded. */
const HOSTILE_PASSWORDS = ['pa/ss', 'p@ss', 'p:ss', 'p%ss', 'p%2Fss', 'pässwörd-密码', '', 'a/b@c:d%e', '//', '@@', 'x/y/z@', '5672/vh'];

describe('maskCredentials, the one masker', () => {
  it.each(HOSTILE_PASSWORDS)('masks the password %p in a URL, in a text, in a JSON line and as a bare user:password@host', (password) => {
    const url = `amqp://app-user:${password}@rabbit.internal:5672/prod`;
    const masked = 'amqp://app-user:***@rabbit.internal:5672/prod';
    expect(maskCredentials(url)).toBe(masked);
    expect(maskUrl(url)).toBe(masked);
    expect(maskCredentials(`connect failed: ${url} (ECONNREFUSED)`)).toBe(`connect failed: ${masked} (ECONNREFUSED)`);
    expect(maskCredentials(JSON.stringify({ error: `to ${url}` }))).not.toContain(`:${password}@`);
    if (!password.includes('/')) {
      expect(maskCredentials(`login as app-user:${password}@db.internal refused`)).toBe('login as app-user:***@db.internal refused');
    }
    for (const text of [url, `x ${url} y`, JSON.stringify({ url })]) {
      if (password.length >= 2 && !masked.includes(password)) expect(maskCredentials(text)).not.toContain(password);
    }
  });

  it('masks a user with an @ and an empty user, and every URL of a text', () => {
    expect(maskCredentials('redis://:pw@r:6379')).toBe('redis://:***@r:6379');
    expect(maskCredentials('amqp://a@corp:pw@host')).toBe('amqp://a@corp:***@host');
    expect(maskCredentials('Could not connect to amqp://guest:s3cr3t@host:5672/vh, nor amqps://u:p%40ss@h2')).toBe(
      'Could not connect to amqp://guest:***@host:5672/vh, nor amqps://u:***@h2',
    );
    expect(maskCredentials('postgres://app:x@db/app\nmongodb+srv://m:y@cluster0/db')).toBe(
      'postgres://app:***@db/app\nmongodb+srv://m:***@cluster0/db',
    );
  });

  it('masks password-like pairs of query and connection strings', () => {
    expect(maskCredentials('GET /x?user=a&password=hunter2&token=abc')).toBe('GET /x?user=a&password=***&token=***');
    expect(maskCredentials('host=db user=app password=s3cret dbname=x')).toBe('host=db user=app password=*** dbname=x');
  });

  it('leaves texts without credentials as they are: URLs without a password, ports, stack traces, scoped packages', () => {
    for (const text of [
      'amqp://rabbit:5672 NOT_FOUND - no queue orders.error',
      'amqp://host:5672 and amqp://user@host',
      'connect ECONNREFUSED 127.0.0.1:5672',
      '    at async file:///app/node_modules/@nestjs/core/router.js:12:7',
      "Cannot find module '@nestjs/terminus'",
      'order 42 failed at 12:30 (retry 2 of 5)',
      '',
    ]) {
      expect(maskCredentials(text)).toBe(text);
    }
  });

  it('maskUrl: the whole value is one URL, so a password with whitespace is masked too', () => {
    expect(maskUrl('amqp://app:two words@rabbit:5672')).toBe('amqp://app:***@rabbit:5672');
    expect(maskUrl('amqp://rabbit:5672/vh')).toBe('amqp://rabbit:5672/vh');
  });

  it('maskingLogger masks every line at every level', () => {
    const lines: string[] = [];
    const logger = maskingLogger({
      log: (m) => lines.push(m),
      warn: (m) => lines.push(m),
      error: (m) => lines.push(m),
      debug: (m) => lines.push(m),
    });
    logger.log('amqp://u:a/b@h');
    logger.warn('amqp://u:a@b@h');
    logger.error('amqp://u:a:b@h');
    logger.debug('amqp://u:ä@h');
    expect(lines).toEqual(['amqp://u:***@h', 'amqp://u:***@h', 'amqp://u:***@h', 'amqp://u:***@h']);
  });
});

describe('maskingLogger escapes control characters', () => {
  it('shows a body quoted by an error with its escape sequences escaped, its newlines kept', () => {
    const lines: string[] = [];
    const logger = maskingLogger({ log: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(m), debug: (m) => lines.push(m) });
    logger.warn(`Unexpected token '\u001b', "\u001b[2J\u001b]0;owned\u0007{bad" from amqp://a:pw@h\n    at x`);
    expect(lines).toEqual([`Unexpected token '\\u001b', "\\u001b[2J\\u001b]0;owned\\u0007{bad" from amqp://a:***@h\n    at x`]);
  });
});

describe('givenPasswords and maskGivenPasswords', () => {
  it('reads the password of each URL given, as written and decoded', () => {
    expect(givenPasswords('amqp://app:p%40ss@a:5672, amqps://b:two@c/vh,amqp://nopass@d')).toEqual(['p%40ss', 'p@ss', 'two']);
    // the authority ends at the first / ? or #: an @ in the vhost or the query is not the password's end
    expect(givenPasswords('amqp://u:pw@host/vh?x=a@b')).toEqual(['pw']);
    expect(givenPasswords('amqp://u:p@ss@host/v@h')).toEqual(['p@ss']);
    expect(givenPasswords(undefined)).toEqual([]);
    expect(givenPasswords('amqp://a:%E0%A4%A@h')).toEqual(['%E0%A4%A']);
  });

  it("masks those passwords where they stand as a URL's, and leaves every other text as it is", () => {
    const passwords = givenPasswords('amqp://ops:s3cret@rabbit');
    expect(maskGivenPasswords('could not reach amqp://ops:s3cret@rabbit:5672', passwords)).toBe('could not reach amqp://ops:***@rabbit:5672');
    const data = '{"dsn":"amqp://admin:other@db","q":"token=abc&password=x","m":"mailto:x@y","word":"s3cret"}';
    expect(maskGivenPasswords(data, passwords)).toBe(data);
  });
});
