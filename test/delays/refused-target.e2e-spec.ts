import { planDelayTopology, RetryPublisher } from 'nestjs-amqp-retry';
import { createApp, handlerFor, TEST_OPTIONS } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { useSuite } from '../support/suite.js';

/**
 * A target that refuses its due delayed messages (here a handler queue kept full, overflow reject-publish) must not
 * hold the forwarder's places: every other target's delayed messages would wait behind it. The refused ones are never
 * lost: they wait in the ladder until the target takes them.
 */
describe('a delayed target that refuses publishes', () => {
  const suite = useSuite('e2e.refused-target');

  it('holds none of the forwarder: a 100 ms delay elsewhere arrives on time while 120 wait, then all 120 arrive once each', async () => {
    const prefix = suite.ladder();
    const ladder = planDelayTopology(prefix);
    const [fullExchange, otherExchange] = [uniqueName('e2e.refused-target.full'), uniqueName('e2e.refused-target.other')];
    suite.extraExchanges.push(fullExchange, otherExchange);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const Full = handlerFor(
      { queue: suite.retryQueue(), exchange: fullExchange, routingKey: 'k', delays: ['1s'], prefetch: 1, maxLength: 1, overflow: 'reject-publish' },
      () => gate,
    );
    const Other = handlerFor({ queue: suite.retryQueue(), exchange: otherExchange, routingKey: 'k', delays: ['1s'] }, () => undefined);
    const logger = new RecordingLogger();
    suite.app = await createApp([Full, Other], { ...TEST_OPTIONS, delayedDelivery: { prefix } });
    suite.app.useLogger(logger);
    await suite.app.init();
    const publisher = suite.app.get(RetryPublisher);
    const [full, other] = [suite.app.get(Full), suite.app.get(Other)];

    await publisher.publish(fullExchange, 'k', { id: 'first' });
    await waitFor(() => full.calls.length === 1, 'the first message in the gated handler');
    await publisher.publish(fullExchange, 'k', { id: 'fills' }); // the queue is full (maxLength 1) until the gate opens
    await Promise.all(Array.from({ length: 120 }, (_, id) => publisher.publish(fullExchange, 'k', { id }, { delay: 100 })));
    const sent = Date.now();
    await publisher.publish(otherExchange, 'k', { id: 'other' }, { delay: 100 });

    await waitFor(() => other.calls.length === 1, "the other target's message", 10_000);
    const lateness = other.calls[0].at - sent - 100;
    const refused = /Exchange ".*" refused a due delayed message .*given back to ".*" through the delay ladder/;
    await waitFor(() => logger.count(refused) > 0, 'the line about the refused target', 10_000);
    console.log(`refused target: the other target's 100 ms delay arrived ${lateness} ms late behind 120 refused messages`);
    expect(lateness).toBeGreaterThanOrEqual(0);
    expect(lateness).toBeLessThan(1_000); // behind held places it waited 12 s and more
    expect(logger.count(refused)).toBe(1); // one line a minute per exchange, not one per message
    expect(full.calls).toHaveLength(1);

    release();
    await waitFor(() => full.calls.length >= 122, "the full target's 122 messages", 120_000);
    const ids = full.calls.map((c) => (c.payload as { id: unknown }).id);
    expect(new Set(ids).size).toBe(122); // none twice
    expect(await suite.broker.count(ladder.errorQueue)).toBe(0);
    const givenBack = full.calls.filter((c) => Number(c.properties.headers?.['x-delay-given-back']) > 0);
    expect(givenBack.length).toBeGreaterThan(0);
    expect(givenBack[0].properties.headers).toMatchObject({ 'x-delay-ms': 100, 'x-delay-target-exchange': fullExchange });
    console.log(`refused target: all 122 delivered ${Date.now() - sent} ms after the first was due, ${givenBack.length} of them given back`);
  }, 180_000);
});
