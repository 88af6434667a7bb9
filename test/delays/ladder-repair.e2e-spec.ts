import { RetryPublisher } from 'nestjs-amqp-retry';
import { planDelayTopology } from '../../libs/amqp-retry/src/core/delivery/delay.plan.js';
import { LADDER_CHECK_EVERY_MS } from '../../libs/amqp-retry/src/engine/publishing.side.js';
import { createApp, TEST_OPTIONS } from '../support/app.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { uniqueName } from '../support/broker.js';
import { settleWindow, useSuite } from '../support/suite.js';

/**
 * Inside the ladder a level dead-letters into the next without confirms: a message reaching a deleted level queue or
 * exchange would be dropped without a word. Delayed publishes check the whole ladder first, once an interval.
 */
describe('a delay ladder with a part deleted', () => {
  const suite = useSuite('e2e.ladder-repair');

  it('declares a deleted level queue and ready exchange again before the next delayed publishes, which all arrive', async () => {
    const prefix = suite.ladder();
    const queue = uniqueName('e2e.ladder-repair.target');
    suite.extraQueues.push(queue);
    await suite.broker.declareQueue(queue);
    const logger = new RecordingLogger();
    suite.app = await createApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix } });
    suite.app.useLogger(logger);
    await suite.app.init();

    // An operator removes parts that look unused: a level queue that never has consumers, and the ready exchange.
    const ladder = planDelayTopology(prefix);
    const level = `${prefix}.v1.p00.4ms`;
    expect(ladder.queues.map((q) => q.name)).toContain(level);
    await suite.broker.channel.deleteQueue(level);
    await suite.broker.channel.deleteExchange(ladder.readyQueue);
    // The declaration at start counts as a check: the next one is due an interval later.
    await settleWindow(LADDER_CHECK_EVERY_MS + 200);

    const publisher = suite.app.get(RetryPublisher);
    // 1500 ms = 2·512 + 7·64 + 3·8 + 4: through the 4 ms level, then the ready exchange.
    for (let n = 0; n < 5; n++) await publisher.publish('', queue, { n }, { delay: 1500 });
    const arrived = await suite.broker.take(queue, 5, 10_000);
    expect(arrived.map((m) => JSON.parse(m.content.toString()).n).sort()).toEqual([0, 1, 2, 3, 4]);
    expect(await suite.broker.exists(level)).toBe(true);
    expect(logger.count(/Delay ladder ".*": the (exchange|queue) ".*" was deleted; declaring the delay ladder again/)).toBe(1);
  });
});
