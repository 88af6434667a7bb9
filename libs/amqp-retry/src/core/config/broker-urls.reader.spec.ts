import { DEFAULT_URL, describeNode, nodeForAttempt, readBrokerUrls, readUrlList } from './broker-urls.reader.js';

describe('nodeForAttempt', () => {
  it('tries the next node after the lost one first, then round-robin, the lost node last', () => {
    const order = (lost: number, count: number) => [1, 2, 3, 4, 5, 6].map((attempt) => nodeForAttempt(lost, attempt, count));
    expect(order(0, 3)).toEqual([1, 2, 0, 1, 2, 0]);
    expect(order(1, 3)).toEqual([2, 0, 1, 2, 0, 1]);
    expect(order(2, 3)).toEqual([0, 1, 2, 0, 1, 2]);
    expect(order(0, 1)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('visits every node once in any `count` consecutive attempts', () => {
    for (let count = 1; count <= 7; count++) {
      for (let lost = 0; lost < count; lost++) {
        const seen = new Set(Array.from({ length: count }, (_, i) => nodeForAttempt(lost, i + 1, count)));
        expect(seen.size).toBe(count);
      }
    }
  });
});

describe('describeNode', () => {
  it('masks the password and numbers the node only when there are several', () => {
    expect(describeNode(['amqp://u:secret@h1:5681', 'amqps://u:p%2Cq@h2:5682/v'], 1)).toBe('amqps://u:***@h2:5682/v (node 2 of 2)');
    expect(describeNode(['amqp://u:secret@h1:5681'], 0)).toBe('amqp://u:***@h1:5681');
  });
});

describe('readUrlList', () => {
  it('keeps a comma written %2C inside a password, and never shows a password in its errors', () => {
    expect(readUrlList('amqp://u:a%2Cb@h1,amqp://u:c@h2', 'AMQP_URL')).toEqual(['amqp://u:a%2Cb@h1', 'amqp://u:c@h2']);
    expect(() => readUrlList('amqp://u:secret@h1,amqp://u:secret2@', 'AMQP_URL')).toThrow(/^(?!.*secret).*entry 2/);
  });

  it('refuses what is not a list of strings', () => {
    expect(() => readUrlList(['amqp://h', 5], 'urls')).toThrow('urls has 5 as entry 2, which is not an AMQP URL');
    expect(() => readUrlList({}, 'urls')).toThrow('urls is [object Object]');
  });
});

describe('readBrokerUrls: where the broker is, for the module and ParkedMessages alike', () => {
  const a = 'amqp://u:p@n1:5672';
  const b = 'amqp://u:p@n2:5672';

  it('takes urls, else url, else AMQP_URL, else the default', () => {
    expect(readBrokerUrls({ urls: [a, b] }, 'amqp://ignored', 'RetryModule')).toEqual([a, b]);
    expect(readBrokerUrls({ url: a }, 'amqp://ignored', 'RetryModule')).toEqual([a]);
    expect(readBrokerUrls({}, `${a},${b}`, 'RetryModule')).toEqual([a, b]);
    expect(readBrokerUrls({}, ` ${a} `, 'RetryModule')).toEqual([a]);
    expect(readBrokerUrls({}, undefined, 'ParkedMessages')).toEqual([DEFAULT_URL]);
    expect(readBrokerUrls({}, '  ', 'ParkedMessages')).toEqual([DEFAULT_URL]);
  });

  it('names the owner of the option at fault, never the password', () => {
    expect(() => readBrokerUrls({ url: a, urls: [a] }, undefined, 'RetryModule')).toThrow('RetryModule options "url" and "urls" are both set');
    expect(() => readBrokerUrls({ url: 'http://u:secret@h' }, undefined, 'ParkedMessages', true)).toThrow(
      /^Invalid retry configuration: ParkedMessages option "url" is "http:\/\/u:\*\*\*@h"(?!.*secret)/,
    );
  });

  it('reads a list in `url` and ignores trailing commas only where the caller takes a list there', () => {
    expect(readBrokerUrls({ url: `${a},${b},` }, undefined, 'ParkedMessages', true)).toEqual([a, b]);
    expect(readBrokerUrls({}, `${a},`, 'ParkedMessages', true)).toEqual([a]);
    expect(() => readBrokerUrls({}, `${a},`, 'RetryModule')).toThrow('environment variable AMQP_URL has "" as entry 2');
  });
});
