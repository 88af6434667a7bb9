import type { GetMessage } from 'amqplib';
import { PublishError, RetryPublisher, TopologyMismatchError, type RetryHandlerOptions, type RetryObserver } from 'nestjs-amqp-retry';
import { createApp, handlerFor, handlerOf, startApp } from '../support/app.js';
import { ctl } from '../support/broker-control.js';
import { waitFor } from '../support/broker.js';
import { deletePartitionedTopology, requireHashExchange } from '../support/partitions.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { cleanUp, headersOf, SUITE_OPTIONS, useSuite } from '../support/suite.js';

/** A handler that takes `ms` per message and records the ids it saw, in order. */
function slowHandler(options: RetryHandlerOptions, ms: number) {
  return handlerFor(options, () => new Promise((resolve) => setTimeout(resolve, ms)));
}

const idsOf = (calls: ReadonlyArray<{ payload: unknown }>) => calls.map((c) => (c.payload as { id: number }).id);
const bodyId = (message: GetMessage) => (JSON.parse(message.content.toString()) as { id: number }).id;

describe('messages that expire in a handler queue or are pushed out by its length limit', () => {
  const suite = useSuite('e2e.deadletters');

  /** Waits until `n` parked copies are in the error queue and takes them. */
  const parked = (n: number, timeoutMs = 15_000): Promise<GetMessage[]> => suite.broker.take(`${suite.queue}.error`, n, timeoutMs);

  /** What is left in the queue and its dead-letter queue: nothing, once the test is over. */
  const left = async () => ({ queue: await suite.broker.count(suite.queue), deadLetters: await suite.broker.count(`${suite.queue}.dlx.dead`) });

  it('parks a message that expired in the queue (its own expiration) as expired, with its expiration and death history, never dropping it', async () => {
    const { broker, queue } = suite;
    const Handler = slowHandler({ queue, delays: ['500ms'], maxAttempts: 3, prefetch: 1 }, 1_500);
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    await broker.publish('', queue, { id: 1 });
    await broker.publish('', queue, { id: 2 }, { expiration: '300' });
    await broker.publish('', queue, { id: 3 });

    const [copy] = await parked(1);
    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 2, 'messages 1 and 3 handled');
    expect(idsOf(handlerOf(suite.app!, Handler).calls)).toEqual([1, 3]);
    expect(await left()).toEqual({ queue: 0, deadLetters: 0 });
    expect(bodyId(copy)).toBe(2);
    const headers = headersOf(copy);
    expect(headers).toMatchObject({
      'x-parked-reason': 'expired',
      'x-original-queue': queue,
      'x-retry-attempts': 0,
      'x-original-routing-key': queue,
      'x-original-expiration': '300',
    });
    expect(String(headers['x-exception-message'])).toContain('its expiration of 300 ms');
    const history = headers['x-retry-death-history'] as Array<Record<string, unknown>>;
    expect(history.find((d) => d.queue === queue)).toMatchObject({ reason: 'expired', 'original-expiration': '300' });
  });

  it("parks what the queue's message TTL expired, and handles the rest", async () => {
    const { broker, queue } = suite;
    const Handler = slowHandler({ queue, delays: ['1s'], prefetch: 1, messageTtl: '300ms' }, 1_000);
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    for (const id of [1, 2, 3]) await broker.publish('', queue, { id });

    const copies = await parked(2);
    expect(copies.map(bodyId).sort()).toEqual([2, 3]);
    for (const copy of copies) {
      expect(headersOf(copy)['x-parked-reason']).toBe('expired');
      expect(String(headersOf(copy)['x-exception-message'])).toContain("the queue's message TTL");
    }
    expect(idsOf(handlerOf(suite.app, Handler).calls)).toEqual([1]);
    expect(await left()).toEqual({ queue: 0, deadLetters: 0 });
  });

  it("drops them with onExpired: 'drop', counted for observers and logged once a minute at most", async () => {
    const { broker, queue } = suite;
    const dropped: string[] = [];
    const observer: RetryObserver = { dropped: (e) => dropped.push(`${e.queue}:${e.reason}`) };
    const Handler = slowHandler({ queue, delays: ['1s'], prefetch: 1, messageTtl: '200ms', onExpired: 'drop' }, 800);
    const logger = new RecordingLogger();
    const app = await createApp([Handler], { ...SUITE_OPTIONS, observers: [observer] });
    app.useLogger(logger);
    suite.app = await app.init();
    for (const id of [1, 2, 3, 4]) await broker.publish('', queue, { id });

    await waitFor(() => dropped.length === 3, 'three drops', 10_000);
    expect(dropped).toEqual([`${queue}:expired`, `${queue}:expired`, `${queue}:expired`]);
    expect(idsOf(handlerOf(app, Handler).calls)).toEqual([1]);
    expect(await broker.count(`${queue}.error`)).toBe(0);
    expect(logger.count(new RegExp(`"${queue.replace(/\./g, '\\.')}": dropped 1 message that expired or was pushed out by a length limit`))).toBe(1);
    expect(logger.count(/dropped \d+ messages?/)).toBe(1); // the next two wait for the next minute's line
  });

  it("retries the next failure of a message that once expired in the queue and was moved back into it, even with onExpired: 'drop'", async () => {
    const { broker, queue } = suite;
    const dropped: string[] = [];
    const observer: RetryObserver = { dropped: (e) => dropped.push(e.reason) };
    const Handler = handlerFor({ queue, delays: ['200ms'], maxAttempts: 3, onExpired: 'drop' }, (_payload, context) => {
      if (context.attempt === 1) throw new Error('a passing failure');
    });
    suite.app = await startApp([Handler], { ...SUITE_OPTIONS, observers: [observer] });
    // The death headers of an expiry in the queue, which RabbitMQ 3.x keeps on a message a shovel or a move puts back.
    const time = { '!': 'timestamp', value: Math.floor(Date.now() / 1000) };
    const expiredHere = {
      'x-first-death-queue': queue,
      'x-first-death-reason': 'expired',
      'x-first-death-exchange': '',
      'x-death': [{ count: 1, reason: 'expired', queue, time, exchange: '', 'routing-keys': [queue] }],
    };
    await broker.publish('', queue, { id: 1 }, { headers: expiredHere });

    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 2, 'the message handled again after its failure');
    expect(handlerOf(suite.app, Handler).calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(dropped).toEqual([]);
    expect(await broker.count(`${queue}.error`)).toBe(0);
    await waitFor(async () => (await left()).deadLetters === 0 && (await left()).queue === 0, 'nothing left behind');
  });

  it.each([
    ['drop-head', [2, 3], [1, 4]],
    ['reject-publish-dlx', [3, 4], [1, 2]],
  ] as const)('parks what overflow %s leaves out as maxlen', async (overflow, parkedIds, handledIds) => {
    const { broker, queue } = suite;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const Handler = handlerFor({ queue, delays: ['1s'], prefetch: 1, maxLength: 1, overflow }, () => gate);
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    await broker.publish('', queue, { id: 1 });
    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 1, 'message 1 in the handler');
    // reject-publish-dlx refuses (nacks) the publish as well as dead-lettering it: the test's publisher sees the nack.
    for (const id of [2, 3, 4]) await broker.publish('', queue, { id }).catch(() => undefined);

    const copies = await broker.take(`${queue}.error`, 2);
    release();
    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 2, 'the message that fit handled');
    expect(copies.map(bodyId)).toEqual(parkedIds);
    expect(copies.map((c) => headersOf(c)['x-parked-reason'])).toEqual(['maxlen', 'maxlen']);
    expect(idsOf(handlerOf(suite.app, Handler).calls)).toEqual(handledIds);
    expect(await left()).toEqual({ queue: 0, deadLetters: 0 });
  });

  it('refuses a publish to a full reject-publish queue with an error naming the queue and its limit', async () => {
    const { queue } = suite;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const Handler = handlerFor({ queue, delays: ['1s'], prefetch: 1, maxLength: 1, overflow: 'reject-publish' }, () => gate);
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    const publisher = suite.app.get(RetryPublisher);
    await publisher.publish('', queue, { id: 1 });
    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 1, 'message 1 in the handler');
    await publisher.publish('', queue, { id: 2 });

    const refused = await publisher.publish('', queue, { id: 3 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    release();
    expect(refused).toBeInstanceOf(PublishError);
    expect((refused as Error).message).toContain(`the queue "${queue}" (maxLength 1, overflow 'reject-publish') is full`);
    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 2, 'message 2 handled');
    expect(idsOf(handlerOf(suite.app, Handler).calls)).toEqual([1, 2]);
    expect(await suite.broker.count(`${queue}.error`)).toBe(0);
  });

  it('on a quorum queue, refuses publishes once it holds more than its limit, naming the queue', async () => {
    const { queue } = suite;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const Handler = handlerFor({ queue, delays: ['300ms'], prefetch: 1, maxLength: 1, queueType: 'quorum' }, (payload) =>
      (payload as { id: number }).id === 1 ? gate : undefined,
    );
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    const publisher = suite.app.get(RetryPublisher);
    await publisher.publish('', queue, { id: 1 });
    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 1, 'message 1 in the handler');
    // A quorum queue applies its limit one message late: it refuses a publish once it holds more than maxLength.
    const accepted: number[] = [];
    let refused: unknown;
    for (let id = 2; id <= 5 && refused === undefined; id++) {
      await publisher.publish('', queue, { id }).then(
        () => accepted.push(id),
        (error: unknown) => (refused = error),
      );
    }
    release();

    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 1 + accepted.length, 'every accepted message handled');
    expect((refused as Error | undefined)?.message).toContain(`the queue "${queue}" (maxLength 1, overflow 'reject-publish') is full`);
    expect(accepted.length).toBeGreaterThanOrEqual(1);
    expect(idsOf(handlerOf(suite.app, Handler).calls)).toEqual([1, ...accepted]);
    expect(await suite.broker.count(`${queue}.error`)).toBe(0);
  });

  it.each([
    ['drop-head', { parked: [2], handled: [1, 3], refused: [] }],
    ['reject-publish-dlx', { parked: [3], handled: [1, 2], refused: [3] }],
    ['reject-publish', { parked: [], handled: [1, 2], refused: [3] }],
  ] as const)("follows an operator's length-limit policy with overflow %s, and starts with the policy in place", async (overflow, outcome) => {
    const { broker, queue } = suite;
    const policy = `e2e-maxlen-${queue}`;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const definition = JSON.stringify({ 'max-length': 1, overflow });
    await ctl('set_policy', policy, `^${queue.replace(/\./g, '\\.')}$`, definition, '--apply-to', 'queues');
    try {
      const Handler = handlerFor({ queue, delays: ['1s'], prefetch: 1 }, () => gate);
      suite.app = await startApp([Handler], SUITE_OPTIONS);
      await waitFor(async () => (await ctl('list_queues', 'name', 'policy', '-q', '--no-table-headers')).includes(policy), 'the policy applied');
      await broker.publish('', queue, { id: 1 });
      await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 1, 'message 1 in the handler');
      const refused: number[] = [];
      for (const id of [2, 3]) await broker.publish('', queue, { id }).catch(() => refused.push(id));

      const copies = outcome.parked.length > 0 ? await broker.take(`${queue}.error`, outcome.parked.length) : [];
      release();
      await waitFor(() => handlerOf(suite.app!, Handler).calls.length === outcome.handled.length, 'the messages that fit handled');
      expect({ parked: copies.map(bodyId), refused }).toEqual({ parked: outcome.parked, refused: outcome.refused });
      for (const copy of copies) expect(headersOf(copy)['x-parked-reason']).toBe('maxlen');
      expect(idsOf(handlerOf(suite.app, Handler).calls)).toEqual(outcome.handled);
      expect(await left()).toEqual({ queue: 0, deadLetters: 0 });
    } finally {
      release();
      await ctl('clear_policy', policy);
    }
  });

  it('delivers a higher priority first in a queue with maxPriority', async () => {
    const { queue } = suite;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const Handler = handlerFor({ queue, delays: ['1s'], prefetch: 1, maxPriority: 10 }, (payload) =>
      (payload as { id: number }).id === 1 ? gate : undefined,
    );
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    const publisher = suite.app.get(RetryPublisher);
    await publisher.publish('', queue, { id: 1 });
    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 1, 'message 1 in the handler');
    for (const id of [2, 3]) await publisher.publish('', queue, { id }, { priority: 1 });
    await publisher.publish('', queue, { id: 4 }, { priority: 9 });
    release();

    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 4, 'all four handled');
    expect(idsOf(handlerOf(suite.app, Handler).calls)).toEqual([1, 4, 2, 3]);
    await expect(publisher.publish('', queue, { id: 5 }, { priority: 256 })).rejects.toThrow(
      'Invalid priority 256: a priority is a whole number from 0 to 255',
    );
  });

  it("parks what expired in a partition in that partition's parking queue, through the handler's one dead-letter queue", async () => {
    const { broker, queue } = suite;
    await requireHashExchange();
    const Handler = slowHandler({ queue, delays: ['1s'], prefetch: 1, partitions: { count: 2, key: 'messageId', heartbeat: '200ms' } }, 1_000);
    try {
      suite.app = await startApp([Handler], SUITE_OPTIONS);
      await waitFor(
        async () => (await broker.consumers(`${queue}.p0`)) === 1 && (await broker.consumers(`${queue}.p1`)) === 1,
        'both partitions consumed',
      );
      // One message id: one partition, whose single consumer is busy with the first while the second expires.
      await broker.publish(queue, '', { id: 1 }, { messageId: 'same' });
      await broker.publish(queue, '', { id: 2 }, { messageId: 'same', expiration: '200' });

      const partition = [0, 1].map((i) => `${queue}.p${i}`);
      const copy = await waitFor(async () => {
        for (const p of partition) if ((await broker.count(`${p}.error`)) === 1) return { from: p, messages: await broker.drain(`${p}.error`) };
        return undefined;
      }, 'the parked copy in a partition parking queue');
      await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 1, 'message 1 handled');
      expect(bodyId(copy.messages[0])).toBe(2);
      expect(headersOf(copy.messages[0])).toMatchObject({ 'x-parked-reason': 'expired', 'x-original-queue': copy.from });
      expect(await broker.count(`${queue}.dlx.dead`)).toBe(0);
      expect(await broker.consumers(`${queue}.dlx.dead`)).toBe(1);
    } finally {
      await cleanUp(() => suite.app?.close());
      suite.app = undefined;
      await deletePartitionedTopology(broker, queue, 2);
    }
  });

  it("retries in a partition without taking the partitions' shared dead-letter queue for a deleted one", async () => {
    const { broker, queue } = suite;
    await requireHashExchange();
    const logger = new RecordingLogger();
    const Handler = handlerFor({ queue, delays: ['200ms'], partitions: { count: 2, key: 'messageId', heartbeat: '200ms' } }, (_payload, context) => {
      if (context.attempt === 1) throw new Error('first attempt fails');
    });
    try {
      const app = await createApp([Handler], SUITE_OPTIONS);
      app.useLogger(logger);
      suite.app = await app.init();
      await waitFor(
        async () => (await broker.consumers(`${queue}.p0`)) === 1 && (await broker.consumers(`${queue}.p1`)) === 1,
        'both partitions consumed',
      );
      for (const id of [1, 2, 3, 4]) await broker.publish(queue, '', { id }, { messageId: `m${id}` });

      await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 8, 'each message retried once and handled');
      expect(logger.count(/was deleted; declaring the retry topology again/)).toBe(0);
    } finally {
      await cleanUp(() => suite.app?.close());
      suite.app = undefined;
      await deletePartitionedTopology(broker, queue, 2);
    }
  });

  it('fails the start with the way to migrate when a limit changed since the queue was declared', async () => {
    const { queue } = suite;
    suite.app = await startApp([slowHandler({ queue, delays: ['1s'], maxLength: 5 }, 0)], SUITE_OPTIONS);
    await cleanUp(() => suite.app?.close());
    suite.app = undefined;

    const failed = await startApp([slowHandler({ queue, delays: ['1s'], maxLength: 6 }, 0)], SUITE_OPTIONS).then(
      async (app) => void (await app.close()),
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(TopologyMismatchError);
    expect((failed as Error).message).toContain(`"${queue}"`);
    expect((failed as Error).message).toContain('x-max-length');
    expect((failed as Error).message).toContain('set_policy');
  });
});
