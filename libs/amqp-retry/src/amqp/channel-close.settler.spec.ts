import { EventEmitter } from 'node:events';
import { closeSettled, withSettledClose } from './channel-close.settler.js';

/** A channel whose close() gets no CloseOk: the connection closed first (amqplib's close() never settles then). */
class StuckChannel extends EventEmitter {
  closeCalls = 0;
  close(): Promise<void> {
    this.closeCalls++;
    return new Promise<void>(() => undefined);
  }
}

describe('closeSettled', () => {
  it('settles when the channel closes although its close() never does', async () => {
    const channel = new StuckChannel();
    let settled = false;
    const closing = closeSettled(channel).then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    channel.emit('close');
    await closing;
    expect({ settled, closeCalls: channel.closeCalls }).toEqual({ settled: true, closeCalls: 1 });
  });

  it("resolves with close()'s own reply when it comes", async () => {
    const channel = Object.assign(new EventEmitter(), { close: () => Promise.resolve() });
    await expect(closeSettled(channel)).resolves.toBeUndefined();
  });

  it('rejects as close() does: thrown at once (closed already) or rejected', async () => {
    const thrown = Object.assign(new EventEmitter(), {
      close: (): Promise<void> => {
        throw new Error('Channel closed');
      },
    });
    await expect(closeSettled(thrown)).rejects.toThrow('Channel closed');
    const rejected = Object.assign(new EventEmitter(), { close: () => Promise.reject(new Error('Connection closing')) });
    await expect(closeSettled(rejected)).rejects.toThrow('Connection closing');
  });
});

describe('withSettledClose', () => {
  it("makes the channel's own close() settle on its 'close' event, once per call", async () => {
    const channel = withSettledClose(new StuckChannel());
    const first = channel.close();
    channel.emit('close');
    await expect(first).resolves.toBeUndefined();
    expect(channel.listenerCount('close')).toBe(0);
  });
});
