import { jest } from '@jest/globals';
import { type QueuedWrite, WriteQueue } from './pending-writes.queue.js';

/** A write as the confirm publisher makes them: its `go` writes at once and reports what the buffer said. */
function writer(queue: WriteQueue, log: string[], name: string, fills = () => false): QueuedWrite {
  return {
    go: () => {
      log.push(name);
      queue.written(!fills());
    },
    fail: (error) => log.push(`${name} failed: ${error.message}`),
  };
}

describe('WriteQueue', () => {
  it('lets a write through at once while the buffer has room', () => {
    const queue = new WriteQueue(1_000);
    expect(queue.mustWait()).toBe(false);
    queue.written(true);
    expect(queue.mustWait()).toBe(false);
  });

  it('holds writes while the buffer is full, then lets them through in order after it drains', () => {
    const queue = new WriteQueue(1_000);
    const log: string[] = [];
    queue.written(false); // a write filled the buffer
    expect(queue.mustWait()).toBe(true);
    for (const name of ['a', 'b', 'c']) queue.enqueue(writer(queue, log, name));
    expect(log).toEqual([]);
    queue.drained();
    expect(log).toEqual(['a', 'b', 'c']);
    expect(queue.mustWait()).toBe(false);
  });

  it('stops at the write that fills the buffer again, and goes on at the next drain: one write at a time, no recursion', () => {
    const queue = new WriteQueue(1_000);
    const log: string[] = [];
    let writes = 0;
    const fills = () => ++writes % 1_000 === 0; // every thousandth write fills the buffer
    queue.written(false);
    for (let n = 0; n < 100_000; n++) queue.enqueue(writer(queue, log, String(n), fills));
    queue.drained();
    expect([log.length, queue.size, queue.mustWait()]).toEqual([1_000, 99_000, true]);
    while (queue.size > 0) queue.drained(); // a long line never deepens the stack
    expect(log.length).toBe(100_000);
    expect(log.slice(-1)).toEqual(['99999']);
  });

  it('keeps a newcomer behind a write that was let through and has not written yet', () => {
    const queue = new WriteQueue(1_000);
    const log: string[] = [];
    let later: (() => void) | undefined;
    queue.written(false);
    queue.enqueue({ go: () => (later = () => queue.written(true)), fail: () => undefined }); // writes later
    queue.enqueue(writer(queue, log, 'second'));
    queue.drained();
    expect([log, queue.mustWait()]).toEqual([[], true]);
    later?.();
    expect(log).toEqual(['second']);
  });

  it('fails every waiting write when the buffer stays full, with one timer', () => {
    jest.useFakeTimers();
    try {
      const queue = new WriteQueue(500);
      const log: string[] = [];
      queue.written(false);
      queue.enqueue(writer(queue, log, 'a'));
      queue.enqueue(writer(queue, log, 'b'));
      expect(jest.getTimerCount()).toBe(1);
      jest.advanceTimersByTime(500);
      const stalled = "failed: the connection's write buffer stayed full for 500 ms (publishTimeout)";
      expect(log).toEqual([`a ${stalled}`, `b ${stalled}`]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('releases everyone when the channel closes', () => {
    const queue = new WriteQueue(1_000);
    const log: string[] = [];
    queue.written(false);
    queue.enqueue(writer(queue, log, 'a')); // each finds the channel closed (amqplib throws: nothing written) and says so
    queue.enqueue(writer(queue, log, 'b'));
    queue.closed();
    expect([log, queue.mustWait()]).toEqual([['a', 'b'], false]);
  });
});
