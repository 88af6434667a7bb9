import { retryTopologyNames } from 'nestjs-amqp-retry';
import { createApp, handlerFor } from '../support/app.js';
import { uniqueName } from '../support/broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { SUITE_OPTIONS, useSuite } from '../support/suite.js';

/**
 * The plan queue (`Q.retry.plan`) takes a publish from anyone who may write to the default exchange, and a start
 * deletes the empty queues a record there names as tiers of schedules nobody runs. A record that names anything but
 * tiers of Q is not a start's: it must delete nothing and never fail the start.
 */
describe('a retry plan record naming queues that are no tiers of the queue', () => {
  const suite = useSuite('e2e.plan-names');

  it('deletes none of them, starts, logs the record once and removes it', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, delays: ['150ms'] }, () => undefined);
    const start = async () => {
      const logger = new RecordingLogger();
      const app = await createApp([Handler], SUITE_OPTIONS);
      app.useLogger(logger);
      return { app: await app.init(), logger };
    };
    await (await start()).app.close(); // the topology, as a first start leaves it

    const foreign = uniqueName('e2e-plan-names-foreign');
    suite.extraQueues.push(foreign);
    await broker.declareQueue(foreign);
    const { errorQueue, planQueue } = retryTopologyNames(queue, { delays: ['150ms'] });
    const victims = [foreign, errorQueue, `${queue}.dlx.dead`, queue];
    // Every planted name in a field a start acts on: the newest schedule, another one, the tiers to retire.
    await broker.publish('', planQueue, { tiers: [foreign], others: [[`${queue}.dlx.dead`]], retiring: victims });
    await broker.publish('', planQueue, { tiers: [queue], others: [], retiring: [errorQueue] });
    for (const name of victims) expect(await broker.exists(name)).toBe(true);

    const { app, logger } = await start();
    suite.app = app;
    for (const name of victims) expect(await broker.exists(name)).toBe(true);
    expect(await broker.consumers(queue)).toBe(1);
    expect(logger.count(/deleted the empty tiers/)).toBe(0);
    const ignored = logger.matching(/ignored 2 record\(s\)/).map(({ line }) => line);
    expect(ignored).toHaveLength(1);
    for (const name of victims) expect(ignored[0]).toContain(JSON.stringify(name));
    expect(await broker.count(planQueue)).toBe(1); // the start's own record alone
  });
});
