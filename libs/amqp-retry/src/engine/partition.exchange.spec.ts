import type { AmqpConnection } from '../amqp/amqp.connection.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { HashExchangeWatch } from './partition.exchange.js';

const notFound = Object.assign(new Error('NOT_FOUND - no exchange'), { code: 404 });
const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

function setup() {
  const state = { exists: true, checks: 0, opened: 0, restores: 0, failRestore: false };
  const channel = {
    on: () => channel,
    close: async () => undefined,
    checkExchange: async () => {
      state.checks++;
      if (!state.exists) throw notFound;
    },
  };
  const connection = {
    isConnected: true,
    createChannel: async () => {
      state.opened++;
      return channel;
    },
  } as unknown as AmqpConnection;
  const warnings: string[] = [];
  const lines: string[] = [];
  const logger = {
    log: (l: string) => lines.push(l),
    warn: (l: string) => warnings.push(l),
    error: () => undefined,
    debug: () => undefined,
  } as RetryLogger;
  const restore = async () => {
    state.restores++;
    if (state.failRestore) throw new Error('NOT_FOUND - no queue acc.p1');
    state.exists = true;
  };
  const watch = new HashExchangeWatch(connection, 'acc', 'acc', restore, logger);
  return { state, warnings, lines, watch };
}

describe('HashExchangeWatch', () => {
  it('checks once per heartbeat on one channel, and restores nothing while the exchange exists', async () => {
    const { state, watch, warnings } = setup();
    for (let i = 0; i < 3; i++) {
      watch.check();
      watch.check(); // one check at a time: skipped while the first runs
      await settled();
    }
    expect({ checks: state.checks, opened: state.opened, restores: state.restores, warnings }).toEqual({
      checks: 3,
      opened: 1,
      restores: 0,
      warnings: [],
    });
  });

  it('declares a missing exchange again with one warning, and tries a failed restore again each heartbeat, warning once more', async () => {
    const { state, watch, warnings, lines } = setup();
    state.exists = false;
    state.failRestore = true;
    for (let i = 0; i < 3; i++) {
      watch.check();
      await settled();
    }
    expect(state.restores).toBe(3);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('"acc": the hash exchange "acc" was deleted while the application runs');
    expect(warnings[1]).toContain('could not declare the hash exchange "acc" again (NOT_FOUND - no queue acc.p1); trying again each heartbeat');
    state.failRestore = false;
    watch.check();
    await settled();
    expect(lines).toEqual(['"acc": declared the hash exchange "acc" again and bound its partitions']);
    watch.check();
    await settled();
    expect({ restores: state.restores, warnings: warnings.length }).toEqual({ restores: 4, warnings: 2 });
  });

  it('checks nothing while the connection is down or once closed', async () => {
    const { state, watch } = setup();
    (watch as unknown as { connection: { isConnected: boolean } }).connection.isConnected = false;
    watch.check();
    await settled();
    (watch as unknown as { connection: { isConnected: boolean } }).connection.isConnected = true;
    await watch.close();
    watch.check();
    await settled();
    expect(state.checks).toBe(0);
  });
});
