import { RetryPublisher } from 'nestjs-amqp-retry';
import { planDelayTopology, delayLevels } from '../../libs/amqp-retry/src/core/delivery/delay.plan.js';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

/**
 * Copies waiting in the delay ladder must be persistent whatever the publish said (a broker restart
 * must not lose them), and a due message that no queue takes must be parked, as an immediate publish would reject.
 */
describe('delayed copies', () => {
  const suite = useSuite('e2e.copies');
  let prefix: string;
  let exchange: string;

  beforeEach(async () => {
    prefix = suite.ladder();
    exchange = uniqueName('e2e.copies.x');
    suite.extraExchanges.push(exchange);
    await suite.broker.channel.assertExchange(exchange, 'direct', { durable: true });
    suite.app = await startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix } });
  });

  it('keeps the waiting copy persistent when published with persistent: false', async () => {
    await suite.app!.get(RetryPublisher).publish(exchange, 'k', { id: 1 }, { delay: 60_000, persistent: false });
    const [top] = delayLevels(60_000);
    const level = planDelayTopology(prefix).queues.find((q) => q.arguments['x-message-ttl'] === top.ttlMs)!.name;
    const waiting = await waitFor(() => suite.broker.channel.get(level, { noAck: true }), 'the copy in its ladder level');
    expect(waiting.properties.deliveryMode).toBe(2);
  });

  it('parks a due message that no queue takes (undeliverable), instead of dropping it', async () => {
    await suite.app!.get(RetryPublisher).publish(exchange, 'no-binding', { id: 2 }, { delay: 100 });
    const [parked] = await suite.broker.take(`${prefix}.error`, 1);
    expect(JSON.parse(parked.content.toString())).toEqual({ id: 2 });
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'undeliverable', 'x-original-exchange': exchange });
    expect(String(parked.properties.headers?.['x-exception-message'])).toMatch(/unroutable/);
  });
});
