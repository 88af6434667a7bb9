import { jest } from '@jest/globals';
import { WriteQueue } from './write.queue.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('WriteQueue', () => {
  it('lets a write through at once while the buffer has room', () => {
    const queue = new WriteQueue(1_000);
    expect(queue.turn()).toBeUndefined();
    queue.written(true);
    expect(queue.turn()).toBeUndefined();
  });

  it('holds writes while the buffer is full, then lets them through one at a time after it drains', async () => {
    const queue = new WriteQueue(1_000);
    queue.written(false); // a write filled the buffer
    const order: number[] = [];
    const writers = [1, 2, 3].map((n) => queue.turn()!.then(() => order.push(n)));
    await tick();
    expect(order).toEqual([]);
    queue.drained();
    await tick();
    expect(order).toEqual([1, 2, 3]); // one batch
    const newcomer = queue.turn(); // newcomers wait until the batch has written
    expect(newcomer).toBeDefined();
    queue.written(true);
    queue.written(false); // the second write filled the buffer again
    queue.written(true);
    await Promise.all(writers);
    queue.closed();
    await newcomer;
  });

  it('lets the waiting through in batches of 64, the next batch once the previous one has written', async () => {
    const queue = new WriteQueue(1_000);
    queue.written(false);
    let through = 0;
    for (let n = 0; n < 100; n++) void queue.turn()!.then(() => through++);
    queue.drained();
    await tick();
    expect(through).toBe(64);
    for (let n = 0; n < 64; n++) queue.written(true);
    await tick();
    expect(through).toBe(100);
  });

  it('fails every waiting publish when the buffer stays full, with one timer', async () => {
    jest.useFakeTimers();
    try {
      const queue = new WriteQueue(500);
      queue.written(false);
      const waiting = [queue.turn()!, queue.turn()!];
      jest.advanceTimersByTime(500);
      for (const turn of waiting) await expect(turn).rejects.toThrow("the connection's write buffer stayed full for 500 ms (publishTimeout)");
    } finally {
      jest.useRealTimers();
    }
  });

  it('releases everyone when the channel closes', async () => {
    const queue = new WriteQueue(1_000);
    queue.written(false);
    const waiting = [queue.turn()!, queue.turn()!];
    queue.closed();
    await Promise.all(waiting);
    expect(queue.turn()).toBeUndefined();
  });
});
