import { RetryConfigError } from '../../errors/retry-config.error.js';
import { checkPartitionChannels, checkServerPartitions } from './server-partitions.config.js';

const at = (key: string) => `RetryServer option "${key}"`;
const partitions = { count: 4, key: { header: 'x-account-id' } };

describe('checkServerPartitions', () => {
  it('accepts a partitioned server with an exchange, and anything without partitions', () => {
    expect(() => checkServerPartitions({ queue: 'accounts', exchange: 'bank', partitions }, at)).not.toThrow();
    expect(() => checkServerPartitions({ queue: 'accounts', exchange: 'bank', partitions, circuitBreaker: false }, at)).not.toThrow();
    expect(() => checkServerPartitions({ queue: 'accounts', circuitBreaker: true, rateLimit: { calls: 1, per: '1s' } }, at)).not.toThrow();
  });

  it('refuses partitions without an exchange, naming both options and the fix', () => {
    const error = (() => {
      try {
        checkServerPartitions({ queue: 'accounts', partitions }, at);
      } catch (e) {
        return e;
      }
    })() as RetryConfigError;
    expect(error).toBeInstanceOf(RetryConfigError);
    expect(error.key).toBe('RetryServer option "partitions"');
    expect(error.message).toContain('RetryServer option "partitions" is given without "exchange"');
    expect(error.message).toContain('a partitioned "accounts" has no queue of that name (its partitions are "accounts.p0" ...)');
    expect(error.message).toContain("add exchange, e.g. exchange: 'accounts.in', and publish there: RetryClient({ exchange })");
  });

  it.each([
    [{ circuitBreaker: true }, 'circuitBreaker'],
    [{ circuitBreaker: { openFor: '5s' } }, 'circuitBreaker'],
    [{ rateLimit: { calls: 10, per: '1s' } }, 'rateLimit'],
  ])('refuses %j beside partitions, naming %s', (extra, key) => {
    expect(() => checkServerPartitions({ queue: 'accounts', exchange: 'bank', partitions, ...extra }, at)).toThrow(
      `Invalid retry configuration: RetryServer option "${key}" is given together with "partitions".`,
    );
  });
});

describe('checkPartitionChannels', () => {
  it('accepts what one connection holds when one instance owns every partition', () => {
    expect(() => checkPartitionChannels(256, 4, at)).not.toThrow(); // 256 x 5 = 1280 channels
    expect(() => checkPartitionChannels(8, 40, at)).not.toThrow();
  });

  it('refuses a count whose channels, with the schedules, would pass the budget, naming the count, the figures and the fix', () => {
    const error = (() => {
      try {
        checkPartitionChannels(256, 7, at);
      } catch (e) {
        return e;
      }
    })() as RetryConfigError;
    expect(error).toBeInstanceOf(RetryConfigError);
    expect(error.key).toBe('RetryServer option "partitions.count"');
    expect(error.message).toContain('is 256 with 7 retry schedules');
    expect(error.message).toContain('2049 channels on one connection');
    expect(error.message).toContain('channel_max of 2047');
    expect(error.message).toContain('at most 187 partitions with these schedules');
  });
});
