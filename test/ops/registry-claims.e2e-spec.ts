import { NonRetryableError, NotAParkingQueueError, ParkedMessages } from 'nestjs-amqp-retry';
import { HANDLER_REGISTRY_QUEUE } from '../../libs/amqp-retry/src/core/topology/handler-registry.record.js';
import { handlerFor, startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

/**
 * The handler registry takes a record from anyone who may publish to the default exchange. A record of another queue
 * that lists an application's parking queue among its tiers, or names it as its handler queue, must not take the parking
 * queue from that application's own ParkedMessages; where a record still refuses a queue, the refusal names the record.
 */
describe("a registry record claiming another application's parking queue", () => {
  const suite = useSuite('e2e.registry-claims');

  it("neither blocks the application's own ParkedMessages nor goes unnamed where it still refuses", async () => {
    const { broker, queue } = suite;
    const errorQueue = `${queue}.error`;
    const Handler = handlerFor({ queue, delays: [100] }, () => {
      throw new NonRetryableError('refused');
    });
    suite.app = await startApp([Handler], { ...TEST_OPTIONS, application: uniqueName('e2e-claims-app') });
    await broker.publish('', queue, { id: 1 });
    await waitFor(async () => (await broker.count(errorQueue)) === 1, 'the message parked');

    const ghost = uniqueName('e2e-claims-ghost');
    const claimer = uniqueName('e2e-claims-intruder');
    suite.afterThis(() => broker.forgetHandler(ghost));
    suite.afterThis(() => broker.forgetHandler(errorQueue));
    const planted = (record: object) =>
      broker.publish('', HANDLER_REGISTRY_QUEUE, { queueType: 'classic', applications: [claimer], recordedAt: new Date().toISOString(), ...record });
    await planted({ queue: ghost, errorQueue: `${ghost}.error`, tiers: [errorQueue] });
    await planted({ queue: errorQueue, errorQueue: `${ghost}.error`, tiers: [] });

    const own = suite.app.get(ParkedMessages);
    const [parked] = (await own.list({ errorQueue })).items;
    expect(await own.show(errorQueue, parked.id)).toMatchObject({ id: parked.id });
    expect(await own.purge({ errorQueue, ids: [parked.id] }, { dryRun: true })).toMatchObject({ matched: 1, dryRun: true });

    // Without the application's own handlers, the record naming the queue as its handler queue still refuses it: named.
    const outsider = await ParkedMessages.connect({ url: AMQP_URL, wholeVhost: true });
    try {
      const refused = await outsider.purge({ errorQueue, ids: [parked.id] }, { dryRun: true }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(NotAParkingQueueError);
      expect((refused as Error).message).toContain(`the record of ${JSON.stringify(errorQueue)} in "${HANDLER_REGISTRY_QUEUE}"`);
      expect((refused as Error).message).toContain(JSON.stringify(claimer));
    } finally {
      await outsider.close();
    }
  });
});
