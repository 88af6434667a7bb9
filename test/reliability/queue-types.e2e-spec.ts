import { TopologyMismatchError } from 'nestjs-amqp-retry';
import { createApp, handlerFor, handlerOf, startApp } from '../support/app.js';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { ctl } from '../support/broker-control.js';
import { useSuite, type Vhost } from '../support/suite.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/**
 * A vhost whose default queue type is quorum (`rabbitmqctl add_vhost --default-queue-type quorum`, which RabbitMQ
 * recommends on 4.x and 3.10 already honours) makes every queue declared without `x-queue-type` a quorum queue. The
 * library states the type of every queue it declares, so it runs the queues it believes it runs, and a queue found
 * with another type stops the start with an error naming both.
 */
describe('queue types on a vhost whose default queue type is quorum', () => {
  const suite = useSuite('e2e.typed');
  let vhost: Vhost;
  let url: string;
  let broker: TestBroker;

  beforeEach(async () => {
    vhost = await suite.vhost('--default-queue-type', 'quorum'); // deleted after the test, with every queue and exchange in it
    url = vhost.url();
    broker = await TestBroker.connect(url);
    suite.clients.push(broker);
  });

  /** Every queue of the vhost with its type, as the broker lists them. */
  async function queueTypes(): Promise<Record<string, string>> {
    const out = await ctl('list_queues', '-p', vhost.name, 'name', 'type', '-q', '--no-table-headers');
    const lines = out.split('\n').filter((line) => line.trim() !== '');
    return Object.fromEntries(lines.map((line) => line.split('\t') as [string, string]));
  }

  it('declares every queue classic by default (handler, tiers, error, plan, presence, registry, delay ladder) and parks a failing message', async () => {
    const { queue } = suite;
    const Handler = handlerFor({ queue, delays: [100, 200] }, (_, ctx) => {
      throw new Error(`declined ${ctx.attempt}`);
    });
    const app = (suite.app = await startApp([Handler], { url, delayedDelivery: { prefix: uniqueName('e2e.typed-delay') } }));

    const types = await queueTypes();
    expect(Object.keys(types).length).toBeGreaterThan(10); // the ladder alone has dozens
    expect(Object.entries(types).filter(([, type]) => type !== 'classic')).toEqual([]);

    await broker.publish('', queue, { id: 1 });
    const [parked] = await broker.take(`${queue}.error`, 1);
    expect(handlerOf(app, Handler).calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 3 });
    expect(await broker.count(queue)).toBe(0);
  });

  it('fails the start with a TopologyMismatchError naming both types when a queue exists as quorum and is configured classic', async () => {
    const { queue } = suite;
    // What a version that stated no type left on such a vhost: the handler queue became a quorum queue.
    await broker.channel.assertQueue(queue, { durable: true, arguments: { 'x-dead-letter-exchange': `${queue}.dlx` } });
    expect((await queueTypes())[queue]).toBe('quorum');

    const app = (suite.app = await createApp([handlerFor({ queue }, () => undefined)], { url, delayedDelivery: false }));
    const failure = await app.init().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TopologyMismatchError);
    expect(failure).toMatchObject({ kind: 'queue', entity: queue, queueTypes: { configured: 'classic', found: 'quorum' } });
    expect((failure as Error).message).toContain(
      `The queue "${queue}" exists on the broker as a quorum queue, but it is configured as a classic queue`,
    );
    expect((failure as Error).message).toContain("set queueType: 'quorum'");
    expect((failure as Error).message).toContain(`rabbitmqctl delete_queue ${queue}`);
    await app.close().catch(() => undefined);
    suite.app = undefined;
  });

  it('a quorum handler there parks a message that crashes its consumer every time as redelivery-limit, losing nothing', async () => {
    const { queue } = suite;
    const proxy = await new TcpProxy().start();
    suite.afterThis(() => proxy.stop());
    const through = new URL(proxy.url);
    through.pathname = `/${encodeURIComponent(vhost.name)}`;
    const Handler = handlerFor({ queue, queueType: 'quorum' }, () => new Promise(() => undefined)); // hangs, as if crashing
    const app = (suite.app = await startApp([Handler], {
      url: through.toString(),
      delayedDelivery: false,
      reconnect: { initialDelay: '20ms', maxDelay: '50ms' },
      shutdownTimeout: '50ms',
    }));
    await broker.publish('', queue, { id: 'poison' });
    const calls = handlerOf(app, Handler).calls;
    const poisonCalls = () => calls.length;
    for (let delivery = 1; delivery <= 10; delivery++) {
      await waitFor(() => poisonCalls() === delivery, `delivery ${delivery} of the poison message`);
      await proxy.cut(); // nothing is settled: the quorum queue counts the delivery
      await proxy.restore();
    }
    const [parked] = await broker.take(`${queue}.error`, 1);
    expect(poisonCalls()).toBe(10);
    expect(JSON.parse(parked.content.toString())).toEqual({ id: 'poison' });
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'redelivery-limit' });
    expect(await broker.count(queue)).toBe(0);
  });
});
