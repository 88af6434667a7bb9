import { RetryPublisher } from 'nestjs-amqp-retry';
import { createApp, handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { RecordingLogger } from '../support/recording-logger.js';

/**
 * Several broker URLs, without a cluster: three TCP proxies in front of the one test broker stand for three nodes,
 * and cutting a proxy is losing that node. The order of failover is what is tested here; losing a real node of a
 * real cluster is test/cluster/.
 */
describe('failover between several broker URLs', () => {
  const suite = useSuite('e2e.failover');
  let nodes: TcpProxy[];

  beforeEach(async () => {
    nodes = await Promise.all([new TcpProxy().start(), new TcpProxy().start(), new TcpProxy().start()]);
    suite.afterThis(() => Promise.all(nodes.map((node) => node.stop())));
  });

  const escaped = (node: TcpProxy) => node.url.replace('guest:guest', 'guest:***').replace(/[.*/]/g, '\\$&');

  it('starts on the first node that answers, fails over to the next on loss, round-robin, and logs the node masked', async () => {
    await nodes[0].cut(); // node 1 is down at start-up
    const Handler = handlerFor({ queue: suite.queue }, () => undefined);
    suite.app = await startApp([Handler], {
      ...TEST_OPTIONS,
      url: undefined,
      urls: nodes.map((node) => node.url),
      reconnect: { initialDelay: '50ms' },
    });
    const logger = new RecordingLogger();
    suite.app.useLogger(logger);
    // Generous limits: on a loaded machine a recovery (declare, resume) can take seconds; the log tells why on failure.
    const until = (probe: () => boolean, what: string) =>
      waitFor(probe, what, 30_000).catch(async (error: Error) =>
        Promise.reject(
          new Error(
            `${error.message}; consumers ${await suite.broker.consumers(suite.queue)}, ready ${await suite.broker.count(suite.queue)}; logged:\n${logger.lines.join('\n')}`,
          ),
        ),
      );
    expect(nodes.map((node) => node.clients)).toEqual([0, 2, 0]); // the consuming and the publishing connection
    // At least once: a message whose (coalesced) ack was still on its way when the node went is redelivered. So the
    // probes look for each message, and the end checks that every extra call was a broker redelivery.
    const handled = (n: number) => () => handlerOf(suite.app!, Handler).calls.some((call) => (call.payload as { n: number }).n === n);
    await suite.app.get(RetryPublisher).publish('', suite.queue, { n: 1 });
    await waitFor(handled(1), 'the first message');

    await nodes[1].cut(); // node 2 lost: both connections go to node 3, the next one
    await until(() => nodes[2].clients === 2, 'both connections on node 3');
    await suite.app.get(RetryPublisher).publish('', suite.queue, { n: 2 });
    await until(handled(2), 'a message after the first failover');
    const node3 = new RegExp(`^log Reconnected to RabbitMQ at ${escaped(nodes[2])} \\(node 3 of 3\\) after \\d+ ms \\(1 attempt\\)$`);
    expect(logger.count(node3)).toBe(2);

    await nodes[0].restore();
    await nodes[2].cut(); // node 3 lost: the next is node 1 (round-robin), which answers again
    await until(() => nodes[0].clients === 2, 'both connections on node 1');
    await suite.app.get(RetryPublisher).publish('', suite.queue, { n: 3 });
    await until(handled(3), 'a message after the second failover');
    const node1 = new RegExp(`^log Reconnected to RabbitMQ at ${escaped(nodes[0])} \\(node 1 of 3\\) after \\d+ ms \\(1 attempt\\)$`);
    expect(logger.count(node1)).toBe(2);
    expect(logger.count(/^error Lost the connection to RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:\d+ \(node [23] of 3\)/)).toBe(4);
    expect(logger.lines.join('\n')).not.toContain('guest:guest');
    const calls = handlerOf(suite.app, Handler).calls;
    const firsts = calls.filter((call, i) => calls.findIndex((other) => JSON.stringify(other.payload) === JSON.stringify(call.payload)) === i);
    expect(firsts.map((call) => call.payload)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(firsts.every((call) => !call.redelivered)).toBe(true);
    expect(calls.filter((call) => !firsts.includes(call)).every((call) => call.redelivered)).toBe(true);
  });

  it('fails init naming every node and its reason, passwords masked, when none answers', async () => {
    await Promise.all(nodes.map((node) => node.cut()));
    const urls = nodes.map((node) => node.url.replace('guest:guest', 'guest:s3cret'));
    const created = await createApp([handlerFor({ queue: suite.queue }, () => undefined)], { ...TEST_OPTIONS, url: undefined, urls });
    const failure = await created.init().catch((error: unknown) => error as Error);
    await created.close();
    expect((failure as Error).message).toMatch(
      /^Could not connect to any of 3 RabbitMQ nodes: amqp:\/\/guest:\*\*\*@127\.0\.0\.1:\d+ \(node 1 of 3\): .*ECONNREFUSED.*; .*\(node 2 of 3\): .*; .*\(node 3 of 3\): /,
    );
    expect((failure as Error).message).not.toContain('s3cret');
  });
});
