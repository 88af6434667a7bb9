import { EventEmitter } from 'node:events';
import { jest } from '@jest/globals';
import { REPLY_ADDRESS_TRUSTED_MS } from '../core/publish/reply-address.memory.js';
import type { AmqpConnection, ConnectionLoss } from './amqp.connection.js';
import { ReplyAddressProbe } from './reply-address.probe.js';

/** A probe channel whose passive declares wait until the test answers them. */
class FakeChannel extends EventEmitter {
  readonly asked: string[] = [];
  /** The declares not answered yet. */
  readonly pending: Array<(error?: Error & { code?: number }) => void> = [];

  checkQueue(address: string): Promise<unknown> {
    this.asked.push(address);
    return new Promise((resolve, reject) => this.pending.push((error) => (error ? reject(error) : resolve({}))));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** A connection that the test takes down (with the broker's code, or as a lost socket) and brings back. */
class FakeConnection {
  readonly channels: FakeChannel[] = [];
  lastLoss: ConnectionLoss = { count: 0 };
  private up = true;
  private readonly waiting: Array<() => void> = [];

  whenConnected(): Promise<void> {
    return this.up ? Promise.resolve() : new Promise((resolve) => this.waiting.push(resolve));
  }

  createChannel(): Promise<FakeChannel> {
    const channel = new FakeChannel();
    this.channels.push(channel);
    return Promise.resolve(channel);
  }

  /** As amqplib: the connection's close is recorded, then the channel's pending declare fails without a code. */
  lose(code?: number): void {
    this.up = false;
    this.lastLoss = { count: this.lastLoss.count + 1, reason: code ? `Connection closed: ${code} (INTERNAL-ERROR)` : 'the socket closed', code };
    for (const channel of this.channels) {
      channel.emit('close');
      for (const answer of channel.pending.splice(0)) answer(new Error('Channel ended, no reply will be forthcoming'));
    }
  }

  back(): void {
    this.up = true;
    for (const wake of this.waiting.splice(0)) wake();
  }

  /** The declares asked on every channel so far, in order. */
  get asked(): string[] {
    return this.channels.flatMap((channel) => channel.asked);
  }

  /** Answers the oldest declare not answered yet (the probe answers on one channel at a time). */
  answer(error?: Error & { code?: number }): void {
    const channel = this.channels.find((c) => c.pending.length > 0);
    channel?.pending.shift()?.(error);
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

function probeOn(connection: FakeConnection) {
  return new ReplyAddressProbe(() => Promise.resolve(connection as unknown as AmqpConnection), 1_000);
}

describe('ReplyAddressProbe', () => {
  it('asks one address at a time, in order', async () => {
    const connection = new FakeConnection();
    const probe = probeOn(connection);
    const first = probe.state('a');
    const second = probe.state('b');
    await tick();
    expect(connection.asked).toEqual(['a']); // b waits for a's answer
    connection.answer();
    await tick();
    expect(connection.asked).toEqual(['a', 'b']);
    connection.answer(Object.assign(new Error('NOT_FOUND'), { code: 404 }));
    expect(await first).toEqual({ kind: 'exists' });
    expect(await second).toEqual({ kind: 'gone' });
  });

  it('refuses the address whose declare the broker closed the connection over (541), and asks the next once it is back', async () => {
    const connection = new FakeConnection();
    const probe = probeOn(connection);
    const forged = probe.state('forged');
    const honest = probe.state('honest');
    await tick();
    connection.lose(541);
    expect(await forged).toEqual({
      kind: 'refused',
      reason: 'the broker closed the connection (Connection closed: 541 (INTERNAL-ERROR)) when asked about it',
    });
    await tick();
    expect(connection.asked).toEqual(['forged']); // the honest one waits for the connection
    connection.back();
    await tick();
    expect(connection.asked).toEqual(['forged', 'honest']); // on a new channel, and the forged address is not asked again
    connection.answer();
    expect(await honest).toEqual({ kind: 'exists' });
  });

  it('remembers a refused address: the same forged address again, waiting or later, costs no probe and no reconnection', async () => {
    const connection = new FakeConnection();
    const probe = probeOn(connection);
    const forged = probe.state('forged');
    const again = probe.state('forged'); // waiting behind the first
    await tick();
    connection.lose(541);
    connection.back();
    const refused = {
      kind: 'refused',
      reason: 'the broker closed the connection (Connection closed: 541 (INTERNAL-ERROR)) when asked about it',
    };
    expect([await forged, await again, await probe.state('forged')]).toEqual([refused, refused, refused]);
    expect({ asked: connection.asked, losses: connection.lastLoss.count }).toEqual({ asked: ['forged'], losses: 1 });
  });

  it('asks again, once the connection is back, when the socket was lost under a probe (no code from the broker)', async () => {
    const connection = new FakeConnection();
    const probe = probeOn(connection);
    const honest = probe.state('honest');
    await tick();
    connection.lose();
    await tick();
    connection.back();
    await tick();
    expect(connection.asked).toEqual(['honest', 'honest']);
    connection.answer();
    expect(await honest).toEqual({ kind: 'exists' });
  });

  it('refuses an address whose declare the broker closed the channel over with a code other than 404', async () => {
    const connection = new FakeConnection();
    const probe = probeOn(connection);
    const denied = probe.state('denied');
    await tick();
    connection.answer(Object.assign(new Error('ACCESS_REFUSED'), { code: 403 }));
    expect(await denied).toMatchObject({ kind: 'refused', reason: expect.stringContaining('closed the channel (ACCESS_REFUSED)') });
  });

  it('gives up on an address after three lost connections under its probe, saying so', async () => {
    const connection = new FakeConnection();
    const probe = probeOn(connection);
    const state = probe.state('unlucky');
    for (let i = 0; i < 3; i++) {
      await tick();
      connection.lose();
      await tick();
      connection.back();
    }
    expect(await state).toEqual({ kind: 'unknown', reason: 'the connection was lost under its probe 3 times' });
  });

  it('asks once for the requests of one address: those waiting share its probe, those after get its answer while it is trusted', async () => {
    const connection = new FakeConnection();
    const probe = probeOn(connection);
    let now = 1_000_000;
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      const waiting = [probe.state('client'), probe.state('client'), probe.state('other'), probe.state('client')];
      await tick();
      connection.answer();
      await tick();
      connection.answer();
      await Promise.all(waiting);
      now += REPLY_ADDRESS_TRUSTED_MS.exists - 1;
      expect(await probe.state('client')).toEqual({ kind: 'exists' });
      expect(connection.asked).toEqual(['client', 'other']);
      now += 1; // no longer trusted: the caller may have left since
      const again = probe.state('client');
      await tick();
      connection.answer();
      expect(await again).toEqual({ kind: 'exists' });
      expect(connection.asked).toEqual(['client', 'other', 'client']);
    } finally {
      clock.mockRestore();
    }
  });

  it("remembers a gone caller: its further requests cost no probe and no reopened channel (a 404 closes the probe's)", async () => {
    const connection = new FakeConnection();
    const probe = probeOn(connection);
    const first = probe.state('gone');
    await tick();
    connection.answer(Object.assign(new Error('NOT_FOUND'), { code: 404 }));
    expect(await first).toEqual({ kind: 'gone' });
    const later = await Promise.all(Array.from({ length: 5 }, () => probe.state('gone')));
    expect(later).toEqual(Array.from({ length: 5 }, () => ({ kind: 'gone' })));
    expect({ asked: connection.asked, channels: connection.channels.length }).toEqual({ asked: ['gone'], channels: 1 });
  });
});
