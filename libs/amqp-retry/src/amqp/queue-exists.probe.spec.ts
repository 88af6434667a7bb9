import type { Channel } from 'amqplib';
import { queueExists } from './queue-exists.probe.js';

describe('queueExists', () => {
  it('answers false for a name over 255 bytes without opening a channel: no queue can have it', async () => {
    let opened = 0;
    const open = async () => {
      opened++;
      return { checkQueue: async () => ({}), close: async () => undefined } as unknown as Channel;
    };
    expect(await queueExists(open, `${'q'.repeat(251)}.p100`)).toBe(false);
    expect(opened).toBe(0);
    expect(await queueExists(open, 'q'.repeat(255))).toBe(true);
    expect(opened).toBe(1);
  });
});
