import { copyOwn } from './own-keys.copy.js';

describe('copyOwn', () => {
  it('copies own keys, later sources winning, as a spread of them does', () => {
    const a = { x: 1, y: 2 };
    const b = { y: 3, z: undefined };
    expect(copyOwn(a, undefined, b, null)).toEqual({ ...a, ...b });
    expect(Object.keys(copyOwn(a, b))).toEqual(Object.keys({ ...a, ...b }));
    const copy = copyOwn(a);
    copy.x = 9;
    expect(a.x).toBe(1); // a copy, never the source
  });

  it('keeps a key named __proto__ as an own key, never as the prototype (as the spread does, unlike Object.assign)', () => {
    const hostile = JSON.parse('{"__proto__": {"CC": ["audit.all"]}, "tenant": "acme"}') as Record<string, unknown>;
    const copy = copyOwn(hostile, { mandatory: true });
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as { CC?: unknown }).CC).toBeUndefined();
    expect(Object.keys(copy)).toEqual(['__proto__', 'tenant', 'mandatory']);
    expect(copy).toEqual({ ...hostile, mandatory: true });
  });
});
