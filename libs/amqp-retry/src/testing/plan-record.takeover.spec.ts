import type { Channel } from 'amqplib';
import { rebindFirstFailuresIfOwner, takeOverFirstFailures } from '../engine/tier.retirement.js';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import type { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import { MemoryBroker } from './memory.broker.js';
import { MemoryConnection } from './memory.connection.js';
import { VirtualClock } from './virtual.clock.js';
import { resolveHandlerConfig } from '../core/config/handler.config.js';
import { resolveModuleConfig } from '../core/config/module.config.js';
import { readPlanRecord } from '../core/topology/retry-plan.record.js';
import { planRetryTopology, retryNames, tierQueues } from '../core/topology/retry-topology.plan.js';

const schedule = (delay: string) =>
  resolveHandlerConfig({ queue: 'orders', delays: [delay], queueType: 'quorum' }, resolveModuleConfig(), 'Test.handle');

/** An instance's connection to an in-memory broker: what the engine's topology steps use of AmqpConnection and ConfirmPublisher. */
interface MemoryInstance {
  connection: AmqpConnection;
  publisher: ConfirmPublisher;
  open: () => Promise<Channel>;
}

/** An in-memory broker with RabbitMQ 4.x's rules, and `instance()`: a connection of its own to it, for each instance. */
function memoryInstances(): { broker: MemoryBroker; instance: () => MemoryInstance } {
  const broker = new MemoryBroker(new VirtualClock(0));
  const instance = (): MemoryInstance => {
    const memory = new MemoryConnection(broker, () => false, '4.1.0');
    const open = async () => (await memory.createChannel()) as unknown as Channel;
    const connection = { createChannel: open, createConfirmChannel: () => memory.createConfirmChannel() } as unknown as AmqpConnection;
    const publisher = {
      publish: async (exchange: string, routingKey: string, content: Buffer, options: object) => {
        const channel = await memory.createConfirmChannel();
        channel.publish(exchange, routingKey, content, options);
        await channel.waitForConfirms();
        await channel.close();
      },
    } as unknown as ConfirmPublisher;
    return { connection, publisher, open };
  };
  return { broker, instance };
}

/** Declares a schedule's topology, its first tier unbound (as a start does before it takes first failures over). */
async function declare(open: () => Promise<Channel>, config: ReturnType<typeof schedule>): Promise<void> {
  const channel = await open();
  const plan = planRetryTopology(config, { firstFailures: false });
  for (const e of plan.exchanges) await channel.assertExchange(e.name, e.type, { durable: true, arguments: e.arguments });
  for (const q of plan.queues) await channel.assertQueue(q.name, { durable: true, arguments: q.arguments });
  for (const b of plan.bindings) {
    if (b.destinationType === 'queue') await channel.bindQueue(b.destination, b.source, b.pattern, b.arguments);
    else await channel.bindExchange(b.destination, b.source, b.pattern, b.arguments);
  }
  await channel.close();
}

describe('first failures while one instance reconnects and another starts with new delays', () => {
  /**
   * The old schedule's record written (`copies` times: a refresh stopped before its ack leaves two) and read `reads`
   * times, the new schedule declared; a reconnection of the old version and a start of the new one.
   */
  async function twoVersions(reads: number, copies = 1) {
    const { broker, instance } = memoryInstances();
    const [old, next] = [schedule('1s'), schedule('2s')];
    const running = instance();
    await declare(running.open, old);
    await takeOverFirstFailures(running.connection, running.publisher, old);
    const [record] = broker.queue(retryNames('orders').planQueue).ready.map((entry) => entry.message.content);
    for (let i = 1; i < copies && record; i++) await running.publisher.publish('', retryNames('orders').planQueue, record, { persistent: true });
    for (let i = 0; i < reads; i++) {
      const reader = await running.open();
      while (await reader.get(retryNames('orders').planQueue)); // taken and given back with the channel
      await reader.close();
    }
    const starting = instance();
    await declare(starting.open, next);
    const reconnect = () => rebindFirstFailuresIfOwner(running.connection, old);
    const start = () => takeOverFirstFailures(starting.connection, starting.publisher, next);
    const outcome = () => {
      const { firstTierExchange, planQueue } = retryNames('orders');
      const bound = broker.bindings.filter((b) => b.source === firstTierExchange).map((b) => b.destination);
      const records = broker.queue(planQueue).ready.map((entry) => readPlanRecord(entry.message.content)?.tiers[0]);
      return { bound, records };
    };
    return { reconnect, start, outcome, newFirstTier: tierQueues(next)[0] };
  }

  it('go to the new first tier only: the start reads the record the reconnection holds, once it is given back', async () => {
    const { reconnect, start, outcome, newFirstTier } = await twoVersions(0);
    await Promise.all([reconnect(), start()]);
    expect(outcome()).toEqual({ bound: [newFirstTier], records: [newFirstTier] });
  });

  it('go to the new first tier only after a start that refreshed a worn record, and a reconnection after it', async () => {
    const { reconnect, start, outcome, newFirstTier } = await twoVersions(10, 2);
    await start(); // its read refreshes the old record (one copy of the two), then takes that copy, not its own
    await reconnect();
    expect(outcome()).toEqual({ bound: [newFirstTier], records: [newFirstTier] });
  });
});
