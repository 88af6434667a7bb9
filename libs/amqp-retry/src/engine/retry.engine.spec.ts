import { RetryConfigError } from '../errors/retry-config.error.js';
import { RetryEngine } from './retry.engine.js';

describe('RetryEngine.create, the engine without Nest', () => {
  it('reads the options RetryModule takes, and connects only when used', async () => {
    const engine = RetryEngine.create({ url: 'amqp://guest:guest@127.0.0.1:1', delays: ['1s'] });
    expect(engine.health()).toEqual({ connections: { consume: undefined, publish: undefined }, queues: [] });
    expect(engine.isConsuming).toBe(true);
    await engine.close();
  });

  it('fails as RetryModule does on a bad option, naming it', () => {
    expect(() => RetryEngine.create({ delays: ['soon'] })).toThrow(RetryConfigError);
    expect(() => RetryEngine.create({ delays: ['soon'] })).toThrow('RetryModule option "delays"');
  });
});
