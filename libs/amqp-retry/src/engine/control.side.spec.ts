import type { Channel } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { CONTROL_EXCHANGE } from '../core/breaker/control.message.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { ControlSide, type ControlSideDeps } from './control.side.js';
import type { Outgoing } from './publishing.side.js';

/** A consuming connection whose control channel declares CONTROL_EXCHANGE, or is refused it (`refused`). */
function connectionFor(refused: boolean): { connection: AmqpConnection } {
  const channel = {
    on: () => undefined,
    assertExchange: async () => {
      if (refused) throw Object.assign(new Error('ACCESS_REFUSED - access to exchange amqp-retry.control refused'), { code: 403 });
      return { exchange: CONTROL_EXCHANGE };
    },
    assertQueue: async () => ({ queue: 'amq.gen-control' }),
    bindQueue: async () => ({}),
    consume: async () => ({ consumerTag: 'c' }),
    close: async () => undefined,
  };
  const connection = { createChannel: async () => channel as unknown as Channel } as unknown as AmqpConnection;
  return { connection };
}

function sideWith(published: Outgoing[], warnings: string[]): ControlSide {
  const logger = { log: () => undefined, warn: (line: string) => warnings.push(line), error: () => undefined } as unknown as RetryLogger;
  return new ControlSide({
    config: { urls: ['amqp://app:secret@localhost'], application: undefined, controlUsers: undefined },
    logger,
    flowOf: () => {
      throw new RangeError('none');
    },
    handedOver: () => undefined,
    publishing: {
      publish: async (_via: unknown, out: Outgoing) => void published.push(out),
      channel: async () => {
        throw new Error('not used');
      },
      user: 'app',
    } as unknown as ControlSideDeps['publishing'],
    replyAddresses: { state: async () => ({ kind: 'gone' }) },
  });
}

const note = { queue: 'orders', returns: [['id:a', 1] as const] as Array<[string, number]> };

describe('ControlSide hand-over notes', () => {
  it('publishes a note once its listener declared the control exchange', async () => {
    const published: Outgoing[] = [];
    const side = sideWith(published, []);
    await side.listen(connectionFor(false).connection, ['orders']);
    await side.announceReturns(note);
    expect(published.map((out) => [out.exchange, out.routingKey])).toEqual([[CONTROL_EXCHANGE, 'orders']]);
  });

  it('sends its notes with its broker user as userId, which the broker checks', async () => {
    const published: Outgoing[] = [];
    const side = sideWith(published, []);
    await side.listen(connectionFor(false).connection, ['orders']);
    await side.announceReturns(note);
    expect(published.map((out) => out.properties?.userId)).toEqual(['app']);
  });

  it('publishes no note when the control exchange could not be declared: a 404 would close the publisher channel', async () => {
    const published: Outgoing[] = [];
    const warnings: string[] = [];
    const side = sideWith(published, warnings);
    await side.listen(connectionFor(true).connection, ['orders']);
    await side.announceReturns(note);
    await side.announceReturns(note);
    expect(published).toEqual([]);
    expect(warnings.filter((line) => line.includes('without a note'))).toHaveLength(1); // told once
  });

  it('publishes no note before its listener starts, and still does once it stopped: a stopping application hands over last', async () => {
    const published: Outgoing[] = [];
    const side = sideWith(published, []);
    await side.announceReturns(note);
    expect(published).toEqual([]);
    await side.listen(connectionFor(false).connection, ['orders']);
    await side.stop();
    await side.announceReturns(note);
    expect(published).toHaveLength(1);
  });

  it('starts its listener again after a reconnection without rejecting when the control channel cannot open', async () => {
    const warnings: string[] = [];
    const side = sideWith([], warnings);
    let opens = 0;
    const { connection } = connectionFor(false);
    const failing = {
      createChannel: async () => {
        if (++opens > 1) throw new Error('connection closed');
        return connection.createChannel('control commands', true);
      },
    } as unknown as AmqpConnection;
    await side.listen(failing, ['orders']);
    await expect(side.restart(['orders'])).resolves.toBeUndefined();
    expect(warnings.some((line) => line.includes('connection closed'))).toBe(true);
  });
});
