import { createApp, handlerFor, handlerOf } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import type { PrivateBroker } from '../support/private-broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { useSuite } from '../support/suite.js';

const CONSUMER_TIMEOUT_MS = 2_000;
const HANDLER_MS = 5_000;

/**
 * A handler that outlives the broker's consumer timeout on a quorum queue. RabbitMQ 3.10 and 4.0
 * close the channel and count the return in `x-delivery-count`; 4.3 cancels the consumer and counts it only in
 * `x-acquired-count`. Either way the message must end parked after a bounded number of runs, the consuming
 * connection must stay up, and the other handlers on it must keep consuming, each message once.
 *
 * On a node of the test's own: 3.10 and 4.0 check consumer timeouts on the channel tick (`channel_tick_interval`,
 * 60 s by default), which the test shortens, and 3.10 has no `consumer-timeout` policy (set as `consumer_timeout`
 * there). Neither must change on a broker others use. 4.3 checks a quorum queue's consumer timeout in the queue, at
 * once, and needs neither.
 */
describe('consumer timeouts', () => {
  /** Shortens the node's consumer timeout (and, before 4.3, the channel tick that checks it). */
  const setUp = async (node: PrivateBroker) => {
    // 4.3 enforces a quorum queue's consumer timeout in the queue itself; 3.10 and 4.0 only on the channel tick.
    if (node.version !== '4.3') await node.ctl('eval', 'application:set_env(rabbit, channel_tick_interval, 500).');
    if (node.version === '3.10') await node.ctl('eval', `application:set_env(rabbit, consumer_timeout, ${CONSUMER_TIMEOUT_MS}).`);
    else await node.ctl('set_policy', 'e2e-consumer-timeout', '^e2e\\.ct\\.', `{"consumer-timeout":${CONSUMER_TIMEOUT_MS}}`, '--apply-to', 'queues');
  };
  const suite = useSuite('e2e.ct.slow', { privateNode: setUp });

  it('parks a message whose quorum handler outlives the consumer timeout, while another handler on the connection keeps consuming', async () => {
    const { broker, queue: slow } = suite;
    const node = suite.node!;
    const other = uniqueName('e2e.ct.other');
    const aborted: string[] = [];
    const Slow = handlerFor({ queue: slow, queueType: 'quorum' }, async (_, ctx) => {
      await new Promise((resolve) => setTimeout(resolve, HANDLER_MS)); // succeeds, too late, ignoring its signal
      aborted.push(ctx.signal.aborted ? String((ctx.signal.reason as Error).message) : 'not aborted');
    });
    const Other = handlerFor({ queue: other, queueType: 'quorum' }, () => new Promise((resolve) => setTimeout(resolve, 100)));
    const logger = new RecordingLogger();
    const app = (suite.app = await createApp([Slow, Other], { url: node.url, delayedDelivery: false, shutdownTimeout: '100ms' }));
    app.useLogger(logger);
    await app.init();

    const started = Date.now();
    await broker.publish('', slow, { id: 'slow' });
    // The other handler gets a message every 500 ms throughout.
    let sent = 0;
    const feed = setInterval(() => void broker.publish('', other, { n: ++sent }).catch(() => undefined), 500);
    let parked;
    try {
      [parked] = await broker.take(`${slow}.error`, 1, 60_000);
    } finally {
      clearInterval(feed);
    }
    const timeToPark = Date.now() - started;
    const runs = handlerOf(app, Slow).calls.length;
    const otherCalls = handlerOf(app, Other).calls;
    await waitFor(() => otherCalls.length >= sent, 'the other handler to catch up', 10_000);
    console.log(
      `consumer timeouts on RabbitMQ ${node.version}: ${runs} runs, parked after ${timeToPark} ms, other handler ${otherCalls.length}/${sent}`,
    );
    if (process.env.TEST_LOGS) console.log(logger.entries.map((e) => `${e.at - started} ${e.line}`).join('\n'));

    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'redelivery-limit' });
    expect(JSON.parse(parked.content.toString())).toEqual({ id: 'slow' });
    expect(runs).toBeGreaterThanOrEqual(9);
    expect(runs).toBeLessThanOrEqual(11);
    expect(await broker.count(slow)).toBe(0);
    // The other handler handled every message once: its connection never dropped under it.
    const seen = otherCalls.map((c) => (c.payload as { n: number }).n).sort((a, b) => a - b);
    expect(seen).toEqual(Array.from({ length: sent }, (_, i) => i + 1));
    expect(await broker.count(other)).toBe(0);
    expect(logger.count(/Lost the connection/)).toBe(0);
    expect(logger.count(/was the queue deleted/)).toBe(0);
    // Each lost delivery is told once, with its cause, and every abandoned run saw its signal aborted.
    expect(logger.count(/consumer timeout/)).toBeGreaterThanOrEqual(runs - 1);
    expect(logger.count(/consumer timeout/)).toBeLessThanOrEqual(runs + 1);
    await waitFor(() => aborted.length === runs, 'the abandoned runs to end', HANDLER_MS + 2_000);
    expect(aborted.filter((reason) => reason === 'not aborted')).toEqual([]);
  }, 120_000);
});
