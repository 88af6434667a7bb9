import { Socket } from 'node:net';
import amqp from 'amqplib';
import { RetryPublisher } from 'nestjs-amqp-retry';
import { coalesceSocketWrites } from '../../libs/amqp-retry/src/amqp/socket-writes.coalescer.js';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

type WriteMethod = (this: Socket, ...args: unknown[]) => unknown;

/** Counts the writes every socket of this process hands to the kernel (one `_write` or `_writev` is one system call). */
async function countSocketWrites(work: () => Promise<void>): Promise<number> {
  const prototype = Socket.prototype as unknown as Record<'_write' | '_writev', WriteMethod>;
  const originals = { _write: prototype._write, _writev: prototype._writev };
  let writes = 0;
  for (const name of ['_write', '_writev'] as const) {
    const original = originals[name];
    prototype[name] = function counted(this: Socket, ...args: unknown[]) {
      writes++;
      return original.apply(this, args);
    };
  }
  try {
    await work();
  } finally {
    Object.assign(prototype, originals);
  }
  return writes;
}

const bodies = (messages: { content: Buffer }[]) => messages.map((m) => (JSON.parse(m.content.toString()) as { n: number }).n);
const inOrder = (count: number) => Array.from({ length: count }, (_, n) => n);

/**
 * Frames go to the socket one write per pass of amqplib's multiplexer, not one per frame (docs/performance.md,
 * "Socket writes"): the same messages, in the same order, in a fraction of the system calls.
 */
describe('socket writes', () => {
  const COUNT = 2_000;
  const suite = useSuite('e2e.writes', { routed: true });

  it('applies to the installed amqplib: a connection is coalesced, and its publishes arrive complete and in order', async () => {
    const model = await amqp.connect(AMQP_URL, { noDelay: true });
    try {
      expect(coalesceSocketWrites(model)).toBe(true); // false would mean amqplib's internals moved: see the coalescer
      const channel = await model.createConfirmChannel();
      const writes = await countSocketWrites(async () => {
        for (let n = 0; n < COUNT; n++) channel.publish(suite.exchange, 'k', Buffer.from(JSON.stringify({ n })), { persistent: true });
        await channel.waitForConfirms();
      });
      expect(writes).toBeLessThan(COUNT / 10);
      expect(bodies(await suite.broker.take(suite.queue, COUNT))).toEqual(inOrder(COUNT));
    } finally {
      await model.close();
    }
  });

  it("RetryPublisher: 2,000 publishes called at once resolve in a tenth of amqplib's writes, delivered once each, in order", async () => {
    const app = (suite.app = await startApp([], TEST_OPTIONS));
    const publisher = app.get(RetryPublisher);
    await publisher.publish(suite.exchange, 'k', { n: -1 }); // the publishing connection and its channel open first
    await suite.broker.take(suite.queue, 1);
    const writes = await countSocketWrites(async () => {
      await Promise.all(inOrder(COUNT).map((n) => publisher.publish(suite.exchange, 'k', { n })));
    });
    // amqplib alone: one write per publish (2,000 and more); coalesced, one per pass (up to the socket's high-water mark).
    expect(writes).toBeLessThan(COUNT / 10);
    expect(bodies(await suite.broker.take(suite.queue, COUNT))).toEqual(inOrder(COUNT));
  });
});
