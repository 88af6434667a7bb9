import type { ConfirmChannel } from 'amqplib';
import { MemoryBroker } from './memory.broker.js';
import { MemoryConnection } from './memory.connection.js';
import type { PublishRecord } from './memory.channel.js';
import { VirtualClock } from './virtual.clock.js';

/**
 * A quorum queue `records` on an in-memory broker with RabbitMQ 4.x's rules (a delivery limit of 20 by default),
 * holding `bodies` (persistent, JSON). `open` opens a confirm channel; `refuse` says which publishes are nacked.
 */
export async function recordQueue(bodies: string[], refuse: (record: PublishRecord) => boolean = () => false) {
  const broker = new MemoryBroker(new VirtualClock(0));
  const connection = new MemoryConnection(broker, refuse, '4.1.0');
  const setup = await connection.createConfirmChannel();
  await setup.assertQueue('records', { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  for (const body of bodies) setup.publish('', 'records', Buffer.from(body), { persistent: true, contentType: 'application/json' });
  await setup.waitForConfirms();
  await setup.close();
  return {
    open: async () => (await connection.createConfirmChannel()) as unknown as ConfirmChannel,
    depth: () => broker.queue('records').ready.length,
  };
}
