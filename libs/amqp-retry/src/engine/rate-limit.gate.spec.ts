import { jest } from '@jest/globals';
import { readRateLimit } from '../core/breaker/breaker.config.js';
import { RateLimitGate } from './rate-limit.gate.js';

const limit = (calls: number, per: string) => readRateLimit({ calls, per }, (k) => k)!;

describe('RateLimitGate', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  it('lets waiters through in arrival order, one per per/calls, behind one timer', async () => {
    const gate = new RateLimitGate(limit(2, '1s'), Date.now);
    const signal = new AbortController().signal;
    const order: number[] = [];
    const waits = [0, 1, 2, 3].map((n) => gate.wait(signal).then((turn) => turn === 'go' && order.push(n)));
    await Promise.resolve();
    expect(order).toEqual([0]);
    expect(jest.getTimerCount()).toBe(1);
    await jest.advanceTimersByTimeAsync(500);
    expect(order).toEqual([0, 1]);
    await jest.advanceTimersByTimeAsync(1_000);
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3]);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('drops a waiter whose signal aborts, and lets the next one have its turn', async () => {
    const gate = new RateLimitGate(limit(1, '1s'), Date.now);
    const first = new AbortController();
    await gate.wait(first.signal);
    const leaving = new AbortController();
    const left = gate.wait(leaving.signal);
    const staying = gate.wait(new AbortController().signal);
    leaving.abort();
    expect(await left).toBe('gone');
    expect(gate.waiters).toBe(1);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(await staying).toBe('go');
  });

  it('lets every waiter go, unhandled, when closed, and no timer is left', async () => {
    const gate = new RateLimitGate(limit(1, '1h'), Date.now);
    const signal = new AbortController().signal;
    await gate.wait(signal);
    const waiting = gate.wait(signal);
    gate.close();
    expect(await waiting).toBe('gone');
    expect(await gate.wait(signal)).toBe('gone');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('lets every waiter go at once without a turn when interrupted (a pause), and lets later ones wait again', async () => {
    const gate = new RateLimitGate(limit(1, '1h'), Date.now);
    const signal = new AbortController().signal;
    expect(await gate.wait(signal)).toBe('go');
    const waiting = [gate.wait(signal), gate.wait(signal)];
    gate.interrupt();
    expect(await Promise.all(waiting)).toEqual(['interrupted', 'interrupted']);
    expect(jest.getTimerCount()).toBe(0);
    const later = gate.wait(signal);
    await jest.advanceTimersByTimeAsync(3_600_000);
    expect(await later).toBe('go');
  });
});
