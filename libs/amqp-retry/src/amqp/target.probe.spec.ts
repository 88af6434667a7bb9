import { describe, expect, it } from '@jest/globals';
import type { Channel } from 'amqplib';
import { EventEmitter } from 'node:events';
import { TargetProbe } from './target.probe.js';

/** A channel whose passive checks answer from `existing`, a 404 closing it as the broker does. */
function fakeChannels(existing: Set<string>) {
  const calls: string[] = [];
  let opened = 0;
  const open = async () => {
    opened++;
    const channel = new EventEmitter() as EventEmitter & Partial<Channel>;
    const check = async (name: string) => {
      calls.push(name);
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (existing.has(name)) return {};
      channel.emit('close');
      throw Object.assign(new Error(`NOT_FOUND - no ${name}`), { code: 404 });
    };
    channel.checkExchange = check as Channel['checkExchange'];
    channel.checkQueue = check as Channel['checkQueue'];
    return channel as Channel;
  };
  return { open, calls, opened: () => opened };
}

describe('TargetProbe', () => {
  it('answers found, missing, and the default exchange without asking', async () => {
    const fake = fakeChannels(new Set(['orders', 'q1']));
    const probe = new TargetProbe(fake.open);
    expect(await probe.exchangeExists('orders')).toBe(true);
    expect(await probe.exchangeExists('gone')).toBe(false);
    expect(await probe.queueExists('q1')).toBe(true);
    expect(await probe.exchangeExists('')).toBe(true);
    expect(await probe.queueExists('q'.repeat(256))).toBe(false);
    expect(fake.calls).toEqual(['orders', 'gone', 'q1']);
    expect(fake.opened()).toBe(2); // opened again after the 404 closed the first
  });

  it('makes one check for a burst of publishes to one target', async () => {
    const fake = fakeChannels(new Set(['orders']));
    const probe = new TargetProbe(fake.open);
    const answers = await Promise.all(Array.from({ length: 100 }, () => probe.exchangeExists('orders')));
    expect(answers.every(Boolean)).toBe(true);
    expect(fake.calls).toEqual(['orders']);
  });

  it('answers each of several checks at once, though a 404 closes the channel under the others', async () => {
    // As amqplib: a 404 closes the channel, and every other check in flight on it fails with the close, unanswered.
    const calls: string[] = [];
    const open = async () => {
      const channel = new EventEmitter() as EventEmitter & Partial<Channel>;
      let closed = false;
      const check = async (name: string) => {
        calls.push(name);
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (closed) throw new Error('Channel closed');
        if (name.startsWith('ok')) return {};
        closed = true;
        channel.emit('close');
        throw Object.assign(new Error(`NOT_FOUND - no ${name}`), { code: 404 });
      };
      channel.checkExchange = check as Channel['checkExchange'];
      channel.checkQueue = check as Channel['checkQueue'];
      return channel as Channel;
    };
    const probe = new TargetProbe(open);
    const answers = await Promise.all([
      probe.exchangeExists('gone1'),
      probe.queueExists('gone2'),
      probe.queueExists('ok1'),
      probe.exchangeExists('gone3'),
    ]);
    expect(answers).toEqual([false, false, true, false]);
    expect(calls).toEqual(['gone1', 'gone2', 'ok1', 'gone3']);
  });
});
