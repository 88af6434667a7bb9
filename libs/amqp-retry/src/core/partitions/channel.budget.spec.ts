import { RetryConfigError } from '../../errors/retry-config.error.js';
import { channelsOf, checkChannelBudget, consumerChannels } from './channel.budget.js';

const handler = (queue: string, partitions?: number, schedules = 1) => ({ queue, where: `H.${queue}`, partitions, schedules });

describe('the channel budget of partitioned handlers', () => {
  it('counts a consumer and a presence consumer per schedule for each partition, the dead-letter consumer and the members listener', () => {
    expect(channelsOf(handler('a'))).toBe(3);
    expect(channelsOf(handler('a', 24))).toBe(50);
    expect(channelsOf(handler('a', 8, 3))).toBe(34);
    expect(consumerChannels(2047)).toBe(1500);
    expect(consumerChannels(40)).toBe(29);
  });

  it('refuses 24 partitions on a connection of 40 channels, and 4 handlers of 256 on the default 2047', () => {
    expect(() => checkChannelBudget([handler('a', 24)], 40)).toThrow(RetryConfigError);
    expect(() => checkChannelBudget([handler('a', 24)], 40)).toThrow(/"a" \(H.a\): 24 needs 50 channels .* allows 40 .* at most 13 partitions/);
    const four = ['a', 'b', 'c', 'd'].map((q) => handler(q, 256));
    expect(() => checkChannelBudget(four, 2047)).toThrow(/needs 2056 channels/);
  });

  it('lets through what fits, handlers without partitions, and an unknown channel_max', () => {
    expect(() => checkChannelBudget([handler('a', 256), handler('b', 256), handler('c')], 2047)).not.toThrow();
    expect(() => checkChannelBudget([handler('a', 12)], 40)).not.toThrow();
    expect(() =>
      checkChannelBudget(
        Array.from({ length: 50 }, (_, i) => handler(`q${i}`)),
        40,
      ),
    ).not.toThrow();
    expect(() => checkChannelBudget([handler('a', 256)], undefined)).not.toThrow();
  });
});
