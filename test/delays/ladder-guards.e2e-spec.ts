import { planDelayTopology, RetryPublisher } from 'nestjs-amqp-retry';
import { createApp, TEST_OPTIONS } from '../support/app.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { settleWindow, useSuite } from '../support/suite.js';

/** What the delay ladder refuses to carry: messages that would break it, or loop in it. */
describe('the delay ladder guards', () => {
  const suite = useSuite('e2e.ladder-guards');
  let prefix: string;
  let exchange: string;
  let queue: string;
  const arrivals: Array<{ body: unknown; headers: Record<string, unknown> }> = [];
  let logger: RecordingLogger;

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
    logger = new RecordingLogger();
    suite.app = await createApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix } });
    suite.app.useLogger(logger);
    await suite.app.init();
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
    // RabbitMQ 3.13 and later ignore an x-death a client publishes: the copy arrives without it there.
    const [major, minor] = suite.broker.version.split('.').map(Number);
    if (major > 3 || (major === 3 && minor >= 13)) expect(arrivals[1].headers['x-death']).toBeUndefined();
    else expect(arrivals[1].headers['x-death']).toMatchObject([{ queue: 'orders', reason: 'rejected', count: 2 }]);
  });

  it('refuses a delay to the ladder itself, and parks, with a log line, a due message that names the ladder as its target', async () => {
    const ladder = planDelayTopology(prefix);
    const publisher = suite.app!.get(RetryPublisher);
    for (const [to, key] of [
      [ladder.readyQueue, ''],
      [ladder.exchanges[1].name, '0.0.0.0.0.0.0.0.0.0.5'],
      ['', ladder.readyQueue],
    ]) {
      await expect(publisher.publish(to, key, { n: 'loop' }, { delay: 5 })).rejects.toThrow(/is part of the delay ladder/);
    }
    // Another client publishes a due message whose target is the ready exchange straight into the ready queue.
    const { channel } = suite.broker;
    const headers = { 'x-delay-target-exchange': ladder.readyQueue, 'x-delay-target-routing-key': '' };
    channel.publish(ladder.readyQueue, '', Buffer.from('{"n":"by hand"}'), { headers, persistent: true, messageId: 'by-hand' });

    const parked = await waitFor(async () => (await channel.get(ladder.errorQueue, { noAck: true })) || undefined, 'the parked message', 10_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'malformed' });
    expect(parked.content.toString()).toBe('{"n":"by hand"}');
    await waitFor(() => logger.count(/Parked a message .*by-hand.*part of the delay ladder/) === 1, 'the park line', 5_000);
    expect(await suite.broker.count(ladder.readyQueue)).toBe(0);
    expect(arrivals).toEqual([]);
  });

  it('parks a due message its target refuses whose x-death may not go through the ladder, rather than retry it for ever', async () => {
    const ladder = planDelayTopology(prefix);
    const { channel } = suite.broker;
    const full = uniqueName('e2e.ladder-guards.full');
    suite.extraQueues.push(full);
    await channel.assertQueue(full, { durable: true, arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' } });
    // Another client publishes it straight into the ready queue (a classic one: it never dead-letters), so no level
    // carries it; its target, a queue that takes nothing, refuses it, and giving it back would send the x-death through.
    const headers = { 'x-delay-target-exchange': '', 'x-delay-target-routing-key': full, 'x-death': [1] };
    channel.publish(ladder.readyQueue, '', Buffer.from('{"n":"bad death"}'), { headers, persistent: true, messageId: 'bad-death' });

    const parked = await waitFor(async () => (await channel.get(ladder.errorQueue, { noAck: true })) || undefined, 'the parked message', 10_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'malformed' });
    expect(parked.content.toString()).toBe('{"n":"bad death"}');
    await waitFor(() => logger.count(/Parked a message .*bad-death.*Invalid header x-death/) === 1, 'the park line', 5_000);
    expect(await suite.broker.count(ladder.readyQueue)).toBe(0);
  });

  it('parks a due message whose target is a direct reply-to address, which the broker would close the connection over', async () => {
    const ladder = planDelayTopology(prefix);
    const { channel } = suite.broker;
    const forged = 'amq.rabbitmq.reply-to.g1h2AA==.forged';
    const headers = { 'x-delay-target-exchange': '', 'x-delay-target-routing-key': forged };
    channel.publish(ladder.readyQueue, '', Buffer.from('{"n":"to a reply"}'), { headers, persistent: true, messageId: 'to-a-reply' });

    const parked = await waitFor(async () => (await channel.get(ladder.errorQueue, { noAck: true })) || undefined, 'the parked message', 10_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'malformed' });
    expect(parked.content.toString()).toBe('{"n":"to a reply"}');
    await waitFor(() => logger.count(/Parked a message .*to-a-reply.*is a direct reply-to address/) === 1, 'the park line', 5_000);
    expect(await suite.broker.count(ladder.readyQueue)).toBe(0);
  });
});
