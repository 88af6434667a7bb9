import type { INestApplicationContext } from '@nestjs/common';
import type { Channel } from 'amqplib';
import { RetryConfigError, RetryEngine, type RetryHandlerOptions } from 'nestjs-amqp-retry';
import type { AmqpConnection } from '../../libs/amqp-retry/src/amqp/amqp.connection.js';
import { createApp, handlerFor, startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { usePartitionSuite } from '../support/partitions.js';
import { RecordingLogger } from '../support/recording-logger.js';

/** The consuming connection's channels: a start that cannot hold its partitions, and partitions whose consumer could not start. */
describe('partitions and the channels of one connection', () => {
  const suite = usePartitionSuite('e2e.parts.channels', 24);
  const withChannelMax = (max: number) => `${AMQP_URL}${AMQP_URL.includes('?') ? '&' : '?'}channelMax=${max}`;

  const partitioned = (count: number): RetryHandlerOptions & { queue: string } => ({
    queue: suite.queue,
    delays: ['200ms'],
    partitions: { count, key: { header: 'x-key' }, heartbeat: '200ms' },
  });

  it('refuses a start whose partitions one instance could not consume within channel_max, declaring nothing', async () => {
    const Handler = handlerFor(partitioned(24), () => undefined);
    const failure = await startApp([Handler], { ...TEST_OPTIONS, url: withChannelMax(40) }).catch((error: unknown) => error);
    if (!(failure instanceof Error)) suite.apps.push(failure as INestApplicationContext);
    expect(failure).toBeInstanceOf(RetryConfigError);
    expect((failure as Error).message).toContain(`"${suite.queue}" (TestHandler.handle): 24 needs 50 channels on the consuming connection`);
    expect((failure as Error).message).toContain('the connection allows 40');
    expect((failure as Error).message).toContain('Use at most 13 partitions');
    expect(await suite.broker.exists(`${suite.queue}.p0`)).toBe(false);
  });

  it('reports a partition whose consumer could not start as unconsumed, and consumes it once a channel is free', async () => {
    const calls: string[] = [];
    const Handler = handlerFor(partitioned(8), (_payload, ctx) => void calls.push(ctx.queue));
    const b = await startApp([handlerFor(partitioned(8), (_payload, ctx) => void calls.push(ctx.queue))], TEST_OPTIONS);
    // Nest's logger is the process's: A's is set last.
    const logger = new RecordingLogger();
    const a = await createApp([Handler], { ...TEST_OPTIONS, url: withChannelMax(60) });
    a.useLogger(logger);
    await a.init();
    suite.apps.push(a);
    const engine = a.get(RetryEngine);
    const consumed = () => engine.partitions()[0].partitions.filter((p) => p.consuming).length;
    await waitFor(() => consumed() === 4, 'A consuming its half', 10_000);

    // Every channel left on A's consuming connection taken (and each one freed meanwhile, by A's depth reads say, taken
    // again), then B leaves: A owns all 8, and can start none of B's.
    const connection = (engine as unknown as { consuming: { connection: AmqpConnection } }).consuming.connection;
    const held: Channel[] = [];
    const grab = async () => {
      for (;;) {
        try {
          held.push(await connection.createChannel('the test'));
        } catch {
          return;
        }
      }
    };
    await grab();
    let hogging = true;
    const hog = (async () => {
      while (hogging) {
        await grab();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    await b.close();
    await waitFor(() => logger.count(/No channels left to allocate/) > 0, 'a warning', 15_000);
    await waitFor(() => engine.partitions()[0].partitions.every((p) => p.mine), 'A owning all 8', 5_000);
    // The status is the broker's truth: a partition reported consumed has a consumer, one reported unconsumed has none.
    const status = engine.partitions()[0].partitions;
    const idle = status.filter((p) => !p.consuming).map((p) => p.queue);
    expect(idle.length).toBeGreaterThan(0);
    for (const p of status) expect(await suite.broker.consumers(p.queue)).toBe(p.consuming ? 1 : 0);
    expect(
      engine
        .health()
        .queues.filter((q) => !q.consuming)
        .map((q) => q.queue),
    ).toEqual(idle);
    expect(logger.matching(/could not start consuming/)[0].line).toMatch(
      new RegExp(
        `"${suite.queue}": could not start consuming p\\d(, p\\d)* \\(No channels left to allocate\\); (it stays|they stay) this instance's and unconsumed, tried again each heartbeat`,
      ),
    );

    for (let i = 0; i < 100; i++) await suite.broker.publish(suite.queue, '', { i }, { headers: { 'x-key': `k${i}` } });
    hogging = false;
    await hog;
    for (const channel of held) await channel.close();
    await waitFor(() => consumed() === 8, 'every partition consumed', 15_000);
    await waitFor(() => calls.length === 100, 'every message handled', 20_000);
    expect(new Set(calls)).toEqual(new Set(Array.from({ length: 8 }, (_, i) => `${suite.queue}.p${i}`)));
    expect(logger.count(/could not start consuming/)).toBe(1); // once, not each heartbeat
    expect(logger.count(new RegExp(`"${suite.queue}": consuming p\\d(, p\\d)* now`))).toBeGreaterThanOrEqual(1);
  });
});
