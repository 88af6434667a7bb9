import { errorMessage, errorStack, UNPRINTABLE } from './error-message.format.js';

/** A Proxy whose every trap throws: even `instanceof`, property reads and `String()` blow up on it. */
const hostileProxy = (): object => {
  const trap = () => {
    throw new Error('trap');
  };
  return new Proxy(
    {},
    { get: trap, getPrototypeOf: trap, has: trap, ownKeys: trap, getOwnPropertyDescriptor: trap, apply: trap, set: trap, defineProperty: trap },
  );
};

const revokedProxy = (): object => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
};

const throwingGetter = (key: string, target: object = {}): object =>
  Object.defineProperty(target, key, {
    get() {
      throw new Error(`${key} getter`);
    },
  });

class NamelessError extends Error {
  override get name(): string {
    throw new Error('name getter');
  }
}

const circular = (): object => {
  const value: Record<string, unknown> = { id: 1 };
  value.self = value;
  return value;
};

const errorWithMessage = (message: unknown): Error => Object.assign(new Error('placeholder'), { message });

describe('errorMessage', () => {
  it.each<[string, () => unknown, string | RegExp]>([
    ['an Error', () => new Error('payment declined'), 'payment declined'],
    ['an Error subclass', () => new TypeError('bad type'), 'bad type'],
    ['an Error with an empty message', () => new RangeError(''), 'RangeError'],
    ['a string', () => 'plain string', 'plain string'],
    ['an empty string', () => '', ''],
    ['undefined', () => undefined, 'undefined'],
    ['null', () => null, 'null'],
    ['a number', () => 42, '42'],
    ['NaN', () => Number.NaN, 'NaN'],
    ['a boolean', () => false, 'false'],
    ['a symbol', () => Symbol('boom'), 'Symbol(boom)'],
    ['a bigint', () => BigInt(10) ** BigInt(20), '100000000000000000000'],
    ['a function', () => function failing() {}, '[function failing]'],
    [
      'an anonymous arrow',
      () =>
        (
          () => () =>
            undefined
        )(),
      '[function]',
    ],
    ['Object.create(null)', () => Object.create(null), UNPRINTABLE],
    ['Object.create(null) with fields', () => Object.assign(Object.create(null), { code: 7 }), '{"code":7}'],
    ['a plain object', () => ({ code: 'E42', retry: false }), '{"code":"E42","retry":false}'],
    ['an object with a string message', () => ({ message: 'from another realm' }), 'from another realm'],
    ['an object with its own toString', () => ({ toString: () => 'custom text' }), 'custom text'],
    ['an object whose toString throws', () => ({ toString: () => { throw new Error('no'); } }), UNPRINTABLE], // prettier-ignore
    ['an object whose toString returns an object', () => ({ toString: () => ({}), valueOf: () => ({}) }), UNPRINTABLE],
    ['an Error whose message is a number', () => errorWithMessage(503), '503'],
    ['an Error whose message is an object', () => errorWithMessage({ status: 503 }), '{"status":503}'],
    ['an Error whose message is an Error', () => errorWithMessage(new Error('inner')), 'inner'],
    ['an Error whose message is a symbol', () => errorWithMessage(Symbol.iterator), 'Symbol(Symbol.iterator)'],
    ['an Error whose message getter throws', () => throwingGetter('message', new Error('x')), UNPRINTABLE],
    ['an Error subclass whose name getter throws', () => new NamelessError('still readable'), 'still readable'],
    ['the same, with an empty message', () => new NamelessError(''), 'Error'],
    ['a Proxy that throws on every trap', hostileProxy, UNPRINTABLE],
    ['a revoked Proxy', revokedProxy, UNPRINTABLE],
    ['a circular object', circular, '[object Object]'],
    ['an array', () => [1, 'two'], '1,two'],
    ['a huge object, cut', () => ({ data: 'x'.repeat(10_000) }), /^\{"data":"x+\.\.\.$/],
  ])('describes %s without throwing', (_, make, expected) => {
    const value = make();
    let text: unknown;
    expect(() => (text = errorMessage(value))).not.toThrow();
    expect(typeof text).toBe('string');
    if (typeof expected === 'string') expect(text).toBe(expected);
    else expect(text).toMatch(expected);
  });

  it('keeps a huge JSON form short', () => {
    expect(errorMessage({ data: 'x'.repeat(10_000) }).length).toBeLessThan(1_100);
  });

  it('stops describing nested messages after a few levels', () => {
    let error: unknown = 'bottom';
    for (let i = 0; i < 10; i++) error = errorWithMessage(error);
    expect(typeof errorMessage(error)).toBe('string');
  });
});

describe('errorStack', () => {
  it('gives the stack of an Error', () => {
    expect(errorStack(new Error('deep'))).toMatch(/^Error: deep\n\s+at /);
  });

  it.each<[string, () => unknown, string]>([
    ['an Error without a stack', () => Object.assign(new Error('no stack'), { stack: undefined }), 'no stack'],
    ['an Error with an empty stack', () => Object.assign(new Error('empty stack'), { stack: '' }), 'empty stack'],
    ['an Error whose stack is a number', () => Object.assign(new Error('odd stack'), { stack: 12 }), 'odd stack'],
    ['an Error whose stack getter throws', () => throwingGetter('stack', new Error('guarded')), 'guarded'],
    ['a string', () => 'plain string', 'plain string'],
    ['a symbol', () => Symbol('s'), 'Symbol(s)'],
    ['undefined', () => undefined, 'undefined'],
    ['a Proxy that throws on every trap', hostileProxy, UNPRINTABLE],
    ['Object.create(null)', () => Object.create(null), UNPRINTABLE],
  ])('falls back to the message for %s', (_, make, expected) => {
    expect(errorStack(make())).toBe(expected);
  });

  it('gives a stack-like string of a non-Error object that carries one', () => {
    expect(errorStack({ message: 'm', stack: 'Custom: m\n    at somewhere' })).toBe('Custom: m\n    at somewhere');
  });
});
