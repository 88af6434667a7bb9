import { RetryPublisher } from 'nestjs-amqp-retry';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { settleWindow, useSuite } from '../support/suite.js';

/** What the delay ladder refuses to carry: messages that would break it, or loop in it. */
describe('the delay ladder guards', () => {
  const suite = useSuite('e2e.ladder-guards');
  let prefix: string;
  let exchange: string;
  let queue: string;
  const arrivals: Array<{ body: unknown; headers: Record<string, unknown> }> = [];

  beforeEach(async () => {
    prefix = suite.ladder();
    exchange = uniqueName('e2e.ladder-guards.x');
    queue = uniqueName('e2e.ladder-guards.target');
    suite.extraExchanges.push(exchange);
    suite.extraQueues.push(queue);
    arrivals.length = 0;
    const { channel } = suite.broker;
    await channel.assertExchange(exchange, 'direct', { durable: true });
    await suite.broker.declareQueue(queue, { exchange, key: 'k' });
    await channel.consume(queue, (message) => {
      if (!message) return;
      arrivals.push({ body: JSON.parse(message.content.toString()), headers: message.properties.headers ?? {} });
      channel.ack(message);
    });
    suite.app = await startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix } });
  });

  it('refuses a delayed message whose x-death no broker wrote, before sending it, and delays a well-formed one', async () => {
    const publisher = suite.app!.get(RetryPublisher);
    // RabbitMQ 3.10 crashes a level queue that dead-letters an x-death entry that is not a table (it loses the
    // messages around it): such a publish must fail, and send nothing.
    await expect(publisher.publish(exchange, 'k', { n: 'bad' }, { delay: 256, headers: { 'x-death': [1] } })).rejects.toThrow(
      /Invalid header x-death .*Remove x-death/,
    );
    const copied = [
      { queue: 'orders', reason: 'rejected', count: 2, exchange: '', 'routing-keys': ['orders'], time: { '!': 'timestamp', value: 1_700_000_000 } },
    ];
    await publisher.publish(exchange, 'k', { n: 'before' }, { delay: 256 });
    await publisher.publish(exchange, 'k', { n: 'copied' }, { delay: 256, headers: { 'x-death': copied } });
    await publisher.publish(exchange, 'k', { n: 'after' }, { delay: 256 });

    await waitFor(() => arrivals.length >= 3, 'the three well-formed messages', 10_000);
    await settleWindow(300); // a redelivered or stray copy would show up by now
    expect(arrivals.map((a) => (a.body as { n: string }).n)).toEqual(['before', 'copied', 'after']);
    expect(arrivals[1].headers['x-death']).toMatchObject([{ queue: 'orders', reason: 'rejected', count: 2 }]);
  });
});
