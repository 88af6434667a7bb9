import { redactCredentials } from './redact.js';

describe('redactCredentials', () => {
  it('masks the password of URLs of any scheme, keeping the user and host', () => {
    expect(redactCredentials('connect ECONNREFUSED amqp://admin:s3cr%40t@rabbit:5672/vhost')).toBe(
      'connect ECONNREFUSED amqp://admin:***@rabbit:5672/vhost',
    );
    expect(redactCredentials('redis://:pw@r:6379')).toBe('redis://:***@r:6379');
  });

  it('masks password-like query parameters, and leaves text without credentials alone', () => {
    expect(redactCredentials('GET /x?user=a&password=hunter2&token=abc')).toBe('GET /x?user=a&password=***&token=***');
    expect(redactCredentials('amqp://rabbit:5672 NOT_FOUND - no queue orders.error')).toBe('amqp://rabbit:5672 NOT_FOUND - no queue orders.error');
  });
});
