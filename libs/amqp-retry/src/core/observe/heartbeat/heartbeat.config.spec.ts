import { RetryConfigError } from '../../../errors/retry-config.error.js';
import { resolveModuleConfig } from '../../config/module.config.js';
import { readHeartbeat } from './heartbeat.config.js';

const at = (key: string) => `RetryModule option "${key}"`;

describe('readHeartbeat', () => {
  it('is off unless asked; true beats every 5 s; intervalMs sets the pace', () => {
    expect(readHeartbeat(undefined, at)).toBeUndefined();
    expect(readHeartbeat(false, at)).toBeUndefined();
    expect(readHeartbeat(true, at)).toEqual({ intervalMs: 5_000 });
    expect(readHeartbeat({}, at)).toEqual({ intervalMs: 5_000 });
    expect(readHeartbeat({ intervalMs: 250 }, at)).toEqual({ intervalMs: 250 });
    expect(readHeartbeat({ intervalMs: 60_000 }, at)).toEqual({ intervalMs: 60_000 });
  });

  it.each([
    [{ intervalMs: 249 }, 'RetryModule option "heartbeat.intervalMs" is 249'],
    [{ intervalMs: 60_001 }, 'RetryModule option "heartbeat.intervalMs" is 60001'],
    [{ intervalMs: 1.5 }, 'RetryModule option "heartbeat.intervalMs" is 1.5'],
    [{ intervalMs: '5s' }, 'RetryModule option "heartbeat.intervalMs" is "5s"'],
    ['yes', 'RetryModule option "heartbeat" is "yes"'],
    [[], 'RetryModule option "heartbeat" is []'],
  ])('refuses %j, naming the option and the fix', (value, named) => {
    expect(() => readHeartbeat(value, at)).toThrow(RetryConfigError);
    expect(() => readHeartbeat(value, at)).toThrow(`${named}. Give true (a beat every 5000 ms), false, or { intervalMs }`);
  });

  it('refuses a misspelt key, naming it and the one it most likely meant', () => {
    expect(() => readHeartbeat({ interval: 5000 }, at)).toThrow(
      'RetryModule option "heartbeat.interval" is not an option of heartbeat. Did you mean "intervalMs"? Use only intervalMs.',
    );
  });

  it('is read with the module options', () => {
    expect(resolveModuleConfig({ heartbeat: { intervalMs: 1_000 } }).heartbeat).toEqual({ intervalMs: 1_000 });
    expect(resolveModuleConfig({}).heartbeat).toBeUndefined();
  });
});
