import { brokerVersionWarning } from './broker-version.check.js';

const rabbit = (version: unknown, product: unknown = 'RabbitMQ') => ({ product, version, platform: 'Erlang/OTP 26', copyright: '...' });

describe('brokerVersionWarning', () => {
  it.each([['3.13.0'], ['3.13.1'], ['3.13.2'], ['3.13.0-rc.1'], [' 3.13.2 '], ['3.13.2+1.g1234']])('warns for RabbitMQ %p', (version) => {
    const warning = brokerVersionWarning(rabbit(version));
    expect(warning).toContain(`RabbitMQ ${version.trim()} loses messages`);
    expect(warning).toContain('rabbitmq-server issue #11159');
    expect(warning).toContain('Upgrade to 3.13.3 or later');
    expect(warning).toContain('message_containers_deaths_v2');
  });

  it('reads product and version given as Buffers', () => {
    expect(brokerVersionWarning(rabbit(Buffer.from('3.13.2'), Buffer.from('RabbitMQ')))).toContain('RabbitMQ 3.13.2 loses messages');
  });

  it('matches the product name case-insensitively', () => {
    expect(brokerVersionWarning(rabbit('3.13.1', 'rabbitmq'))).toBeDefined();
  });

  it.each([['3.13.3'], ['3.13.7'], ['3.13.20'], ['3.12.14'], ['3.10.8'], ['3.1.13'], ['4.0.1'], ['4.1.0'], ['13.13.2'], ['3.130.2']])(
    'says nothing for RabbitMQ %p',
    (version) => {
      expect(brokerVersionWarning(rabbit(version))).toBeUndefined();
    },
  );

  it.each<[string, Record<string, unknown> | undefined]>([
    ['no properties', undefined],
    ['an empty table', {}],
    ['no version', { product: 'RabbitMQ' }],
    ['no product', { version: '3.13.2' }],
    ['another product', rabbit('3.13.2', 'LavinMQ')],
    ['a numeric version', rabbit(3.132)],
    ['a table as version', rabbit({ major: 3, minor: 13, patch: 2 })],
    ['null values', rabbit(null, null)],
    ['garbage text', rabbit('\u0000\uffff not a version')],
    ['a typed value', rabbit({ '!': 'string', value: '3.13.2' })],
  ])('says nothing for %s', (_, properties) => {
    expect(brokerVersionWarning(properties)).toBeUndefined();
  });

  it('says nothing when given no table at all (from JavaScript)', () => {
    expect(brokerVersionWarning(null as unknown as undefined)).toBeUndefined();
    expect(brokerVersionWarning('RabbitMQ 3.13.2' as unknown as undefined)).toBeUndefined();
  });

  it('keeps a long version short in the warning', () => {
    const warning = brokerVersionWarning(rabbit(`3.13.2${'x'.repeat(10_000)}`)) ?? '';
    expect(warning.length).toBeLessThan(500);
  });
});
