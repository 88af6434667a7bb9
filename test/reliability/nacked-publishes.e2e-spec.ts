import { randomUUID } from 'node:crypto';
import { AmqpConnection } from '../../libs/amqp-retry/src/amqp/amqp.connection.js';
import { ConfirmPublisher } from '../../libs/amqp-retry/src/amqp/confirm.publisher.js';
import { ctl } from '../support/broker-control.js';
import { AMQP_URL } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

/** The channels the broker counts on the connection named `name`. */
async function channelsOf(name: string): Promise<number | undefined> {
  const lines = (await ctl('list_connections', 'client_properties', 'channels', '-q', '--no-table-headers')).split('\n');
  const line = lines.find((l) => l.includes(`{"connection_name","${name}"}`));
  return line === undefined ? undefined : Number(line.split('\t').at(-1));
}

/**
 * A queue at its length limit with `overflow: 'reject-publish'` nacks every publish to it. A stream of them must not
 * use up the publishing connection's channels, which the parker, the forwarder and the outbox relay share.
 */
describe('a stream of nacked publishes', () => {
  const suite = useSuite('e2e.nacked-publishes');

  it('keeps the channels of the publishing connection few, and its other publishers working', async () => {
    const { broker, queue } = suite;
    await broker.channel.assertQueue(queue, { durable: true, arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' } });
    const name = `e2e-nacked-${randomUUID()}`;
    // 64 channels at most on this connection (the broker's default is 2047): a channel per nack would run out at once.
    const url = new URL(AMQP_URL);
    url.searchParams.set('channelMax', '64');
    const connection = await AmqpConnection.open(
      { urls: [url.toString()], name, reconnect: { initialDelayMs: 50, maxDelayMs: 100 }, connectTimeoutMs: 5_000 },
      quiet,
    );
    suite.clients.push(connection);
    const limits = { timeoutMs: 10_000, bufferSize: 1_000, confirmTimeoutMs: 10_000 };
    const nacked = new ConfirmPublisher(connection, limits);
    const other = new ConfirmPublisher(connection, limits);
    suite.clients.unshift(nacked, other); // closed before the connection
    expect(connection.channelMax).toBe(64);

    const failures = new Map<string, number>();
    for (let n = 0; n < 500; n++) {
      const reason = await nacked.publish('', queue, Buffer.from(String(n))).then(
        () => 'confirmed',
        (error: Error) => error.message.replace(/^.*failed: /, ''),
      );
      failures.set(reason, (failures.get(reason) ?? 0) + 1);
    }
    expect(Object.fromEntries(failures)).toEqual({ 'the broker nacked it (a queue at its length limit, or an internal error)': 500 });
    expect(await channelsOf(name)).toBeLessThanOrEqual(3); // the one in use, at most one retired, none of the other publisher's yet
    await other.publish('', `${queue}.none`, Buffer.from('routed nowhere'), { mandatory: false }); // confirmed: a channel was free
  });
});
