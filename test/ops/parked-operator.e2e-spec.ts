import { randomUUID } from 'node:crypto';
import { ParkedCountChangedError, ParkedMessages } from 'nestjs-amqp-retry';
import { HANDLER_REGISTRY_QUEUE } from '../../libs/amqp-retry/src/core/topology/handler-registry.record.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { cleanUp, headersOf, useSuite } from '../support/suite.js';

/**
 * What an operator's replay and purge act on: what was confirmed, in the queues of the view's scope. Messages are
 * parked here by hand (the headers a handler's park writes), in parking queues no application consumes.
 */
describe('replays and purges as an operator confirmed them', () => {
  const suite = useSuite('e2e.parked-op');

  /** Declares the test's handler queue and its parking queue (`queueType`), and returns them. */
  async function queues(queueType: 'classic' | 'quorum' = 'classic') {
    const { broker, queue } = suite;
    const errorQueue = `${queue}.error`;
    await broker.channel.assertQueue(queue, { durable: true });
    await broker.channel.assertQueue(errorQueue, { durable: true, arguments: { 'x-queue-type': queueType } });
    return { queue, errorQueue };
  }

  /** Parks `n` messages in `errorQueue` as failed in `queue`, with the error given; returns their ids. */
  async function park(errorQueue: string, queue: string, n: number, error = 'card declined'): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const id = randomUUID();
      ids.push(id);
      await suite.broker.publish(
        '',
        errorQueue,
        { i },
        {
          messageId: `m-${id}`,
          headers: {
            'x-parked-id': id,
            'x-original-queue': queue,
            'x-parked-reason': 'non-retryable',
            'x-parked-at': new Date().toISOString(),
            'x-exception-message': error,
          },
        },
      );
    }
    return ids;
  }

  async function view(scope: ConstructorParameters<typeof ParkedMessages>[0]): Promise<ParkedMessages> {
    const parked = await ParkedMessages.connect({ url: AMQP_URL, ...scope });
    suite.afterThis(() => cleanUp(() => parked.close()));
    return parked;
  }

  it('a purge or replay given the confirmed count changes nothing when more match by then, and acts on that many once it agrees', async () => {
    const { queue, errorQueue } = await queues();
    const parked = await view({ queues: [{ queue, errorQueue }] });
    await park(errorQueue, queue, 3);
    const selection = { errorQueue, filter: { error: 'card' } };
    const { matched } = await parked.purge(selection, { dryRun: true });
    expect(matched).toBe(3);
    await park(errorQueue, queue, 2); // parked while the operator read the question

    const purge = parked.purge(selection, { expected: matched });
    await expect(purge).rejects.toThrow(ParkedCountChangedError);
    await expect(purge).rejects.toThrow(/^5 parked message\(s\) of ".*" match now, not the 3 confirmed/);
    await expect(parked.replay(selection, { expected: matched })).rejects.toMatchObject({ expected: 3, matched: 5 });
    await waitFor(async () => (await suite.broker.count(errorQueue)) === 5, 'every message still parked');
    expect(await suite.broker.count(queue)).toBe(0);

    expect(await parked.purge(selection, { expected: 5 })).toEqual({ matched: 5, purged: 5, dryRun: false });
    expect(await suite.broker.count(errorQueue)).toBe(0);
  });

  it('a quorum parking queue keeps a message whose replays keep failing below the delivery limit', async () => {
    const { queue, errorQueue } = await queues('quorum');
    const parked = await view({ queues: [{ queue, errorQueue }] });
    const gone = `${queue}.gone`; // the queue it failed in, deleted since: every replay's copy comes back
    const [id] = await park(errorQueue, gone, 1);
    // RabbitMQ 4 drops a quorum message handed out 20 times (no dead-letter exchange on a parking queue).
    for (let attempt = 0; attempt < 25; attempt++) {
      const result = await parked.replay({ errorQueue, ids: [id] });
      expect([result.replayed, result.failed.map((f) => f.id)]).toEqual([0, [id]]);
    }
    await waitFor(async () => (await suite.broker.count(errorQueue)) === 1, 'the message still parked');
    const [message] = await suite.broker.take(errorQueue, 1);
    expect(headersOf(message)['x-parked-id']).toBe(id);
    expect(Number(headersOf(message)['x-delivery-count'] ?? 0)).toBeLessThan(12);
  });

  it("an application's view of a parking queue shared with another application reads, replays and purges its own messages only", async () => {
    const { broker, queue } = suite;
    const other = `${queue}.b`;
    const shared = `${queue}.shared.error`;
    suite.extraQueues.push(other, shared);
    for (const name of [queue, other]) await broker.channel.assertQueue(name, { durable: true });
    await broker.channel.assertQueue(shared, { durable: true });
    const [mine, theirs] = [uniqueName('e2e.app-a'), uniqueName('e2e.app-b')];
    for (const [name, application] of [
      [queue, mine],
      [other, theirs],
    ]) {
      const record = {
        queue: name,
        errorQueue: shared,
        tiers: [],
        queueType: 'classic',
        applications: [application],
        recordedAt: new Date().toISOString(),
      };
      await broker.publish('', HANDLER_REGISTRY_QUEUE, record);
      suite.afterThis(() => broker.forgetHandler(name));
    }
    const ours = await park(shared, queue, 2);
    const others = await park(shared, other, 3);
    const parked = await view({ application: mine });

    expect((await parked.list({})).items.map((m) => m.id)).toEqual(ours);
    expect((await parked.summary({ errorQueue: shared })).total).toBe(2);
    expect(await parked.show(shared, others[0])).toBeUndefined();
    const exported: string[] = [];
    for await (const line of parked.export({ errorQueue: shared })) exported.push((JSON.parse(line) as { id: string }).id);
    expect(exported).toEqual(ours);
    expect(await parked.replay({ errorQueue: shared, filter: {} }, { dryRun: true })).toMatchObject({ matched: 2 });
    expect(await parked.purge({ errorQueue: shared, filter: {} })).toEqual({ matched: 2, purged: 2, dryRun: false });
    expect(await parked.purge({ errorQueue: shared, ids: [others[0]] })).toEqual({ matched: 0, purged: 0, dryRun: false });
    await waitFor(async () => (await broker.count(shared)) === 3, "the other application's messages still parked");
    // The whole vhost sees every application's.
    expect((await parked.wholeVhost().summary({ errorQueue: shared })).total).toBe(3);
  });

  it('an edit and replay removes the twin copies of the id (a refresh cut short), as a replay does', async () => {
    const { queue, errorQueue } = await queues();
    const parked = await view({ queues: [{ queue, errorQueue }] });
    const [id] = await park(errorQueue, queue, 1);
    const [original] = await suite.broker.take(errorQueue, 1);
    for (let copy = 0; copy < 2; copy++) {
      await suite.broker.publish('', errorQueue, original.content, { messageId: original.properties.messageId, headers: headersOf(original) });
    }
    await park(errorQueue, queue, 1); // another message, after the twins: left parked
    expect((await parked.list({})).total).toBe(2); // the twins shown once
    expect(await parked.editAndReplay(errorQueue, id, '{"i":7}')).toEqual({ matched: 1, replayed: 1, failed: [], dryRun: false });
    await waitFor(async () => (await suite.broker.count(errorQueue)) === 1, 'the twin gone with the replayed message');
    const replayed = await suite.broker.take(queue, 1);
    expect(replayed.map((m) => m.content.toString())).toEqual(['{"i":7}']);
  });
});
