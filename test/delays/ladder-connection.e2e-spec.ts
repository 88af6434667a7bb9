import { planDelayTopology, PublishError, type RetryModuleOptions } from 'nestjs-amqp-retry';
import { resolveModuleConfig } from '../../libs/amqp-retry/src/core/config/module.config.js';
import { ObserverHub } from '../../libs/amqp-retry/src/core/observe/observer.hub.js';
import { PublishingSide } from '../../libs/amqp-retry/src/engine/publishing.side.js';
import { waitFor } from '../support/broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { settleWindow, useSuite } from '../support/suite.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/**
 * The delay ladder is declared again after every reconnection of the publishing connection, on the first delayed
 * publish: that declaration must keep the promises of any publish (docs/reliability.md): wait for the connection
 * within publishTimeout, and fail in bounded time when the broker answers nothing (a blocked connection).
 */
describe('the delay ladder of a delayed publish', () => {
  const suite = useSuite('e2e.ladder-connection');

  /** The publishing side alone, through a proxy, its ladder declared; its connection then lost once and back. */
  async function reconnectedSide(options: RetryModuleOptions): Promise<{ proxy: TcpProxy; side: PublishingSide; ready: string }> {
    await suite.broker.declareQueue(suite.queue); // the target: a delayed publish to a missing queue is refused
    const proxy = await new TcpProxy().start();
    suite.afterThis(() => proxy.stop());
    const logger = new RecordingLogger();
    const prefix = suite.ladder();
    const config = resolveModuleConfig({
      url: proxy.url,
      delayedDelivery: { prefix },
      reconnect: { initialDelay: '50ms', maxDelay: '200ms' },
      ...options,
    });
    const side = new PublishingSide(config, logger, new ObserverHub([], logger));
    suite.clients.push(side);
    await side.delayLadder();
    // A reconnection: the broker may have lost the ladder, so the next delayed publish declares it again.
    await proxy.cut();
    await waitFor(() => side.isConnected === false, 'the lost connection');
    await proxy.restore();
    await waitFor(() => side.isConnected === true, 'the reconnection');
    await settleWindow(100); // the reconnection's listeners have run
    // Nothing forwards here: a delayed message stays in the ladder, due in its ready queue.
    return { proxy, side, ready: planDelayTopology(prefix, 'classic').readyQueue };
  }

  const outgoing = (n: number) => ({ exchange: '', routingKey: suite.queue, content: Buffer.from(JSON.stringify({ n })), properties: {} });

  it('waits for the connection within publishTimeout while it is down, then declares the ladder and delays the message', async () => {
    const { proxy, side, ready } = await reconnectedSide({ publishTimeout: '10s' });
    await proxy.cut();
    await waitFor(() => side.isConnected === false, 'the lost connection');
    const startedAt = Date.now();
    const outcome = side.publish('publisher', outgoing(1), 200).then(
      () => Date.now() - startedAt,
      (error: Error) => error.message,
    );
    await settleWindow(1_000);
    await proxy.restore();
    const waited = await outcome;
    expect(typeof waited).toBe('number'); // not a NotConnectedError at once
    expect(waited).toBeGreaterThanOrEqual(1_000);
    const [message] = await suite.broker.take(ready, 1);
    expect(JSON.parse(message.content.toString())).toEqual({ n: 1 });
  });

  it('fails in bounded time while the broker answers no channel.open, and declares the ladder again once it answers', async () => {
    const { proxy, side, ready } = await reconnectedSide({ publishTimeout: '1s', confirmTimeout: '1s' });
    proxy.stall(); // as a broker that blocks the connection: nothing the client sends is read
    const outcome = (n: number) => {
      const startedAt = Date.now();
      return side.publish('publisher', outgoing(n), 200).then(
        () => ({ ms: Date.now() - startedAt, error: undefined }),
        (error: Error) => ({ ms: Date.now() - startedAt, error }),
      );
    };
    const hang = settleWindow(5_000).then(() => ({ ms: 5_000, error: new Error('still waiting after 5 s') }));
    const first = await Promise.race([outcome(1), hang]);
    expect(first.error).toBeInstanceOf(PublishError);
    expect(first.error?.message).toMatch(/delay ladder could not be declared within 1000 ms \(publishTimeout/);
    expect(first.ms).toBeLessThan(2_000);
    // A later publish tries the declaration again, bounded as well, rather than wait on the first one's.
    const second = await Promise.race([outcome(2), hang]);
    expect(second.error).toBeInstanceOf(PublishError);
    expect(second.ms).toBeLessThan(2_000);
    proxy.resume();
    expect((await outcome(3)).error).toBeUndefined();
    const [message] = await suite.broker.take(ready, 1);
    expect(JSON.parse(message.content.toString())).toEqual({ n: 3 });
  });

  it('ends within publishTimeout from the call when the ladder took most of it and the channel then does not open', async () => {
    const { proxy, side } = await reconnectedSide({ publishTimeout: '2s', confirmTimeout: '1s' });
    proxy.stall(); // the declaration of the ladder waits
    const startedAt = Date.now();
    const outcome = side.publish('publisher', outgoing(1), 200).then(
      () => ({ ms: Date.now() - startedAt, error: undefined }),
      (error: Error) => ({ ms: Date.now() - startedAt, error }),
    );
    await settleWindow(1_500);
    // The broker answers again: the ladder is declared, with 0.5 s of the publish left; then it answers nothing more
    // before the publisher's own channel opens.
    const declared = side.delayLadder();
    proxy.resume();
    await declared;
    proxy.stall();
    const hang = settleWindow(6_000).then(() => ({ ms: 6_000, error: new Error('still waiting after 6 s') }));
    const { ms, error } = await Promise.race([outcome, hang]);
    proxy.resume();
    expect(error).toBeInstanceOf(PublishError);
    expect(error?.message).toMatch(/no channel could be opened within 2000 ms \(publishTimeout\)/);
    expect(ms).toBeLessThan(2_500);
  });
});
