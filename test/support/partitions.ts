import { declareHashExchange } from '../../libs/amqp-retry/src/amqp/hash-exchange.probe.js';
import { PartitionsPluginError } from '../../libs/amqp-retry/src/errors/partitions-plugin.error.js';
import { AMQP_URL, type TestBroker } from './broker.js';
import { useSuite, type Suite, type SuiteOptions } from './suite.js';

/**
 * Fails (never skips) when the test broker lacks the consistent-hash exchange, naming the fix. The tests never enable
 * a plugin on a broker they did not start: the project's setup does (scripts/ensure-broker.sh, scripts/rabbitmq.sh).
 */
export async function requireHashExchange(): Promise<void> {
  const exchange = `e2e.parts.probe.${process.pid}`;
  try {
    await declareHashExchange({ urls: [AMQP_URL], connectTimeoutMs: 10_000, queue: 'the partition tests', exchange, arguments: {} });
  } catch (error) {
    if (error instanceof PartitionsPluginError) {
      throw new Error(
        `${error.message} On this machine: npm run broker (scripts/ensure-broker.sh enables it), or point AMQP_URL at a node started by scripts/rabbitmq.sh.`,
        {
          cause: error,
        },
      );
    }
    throw error;
  }
  const { default: amqp } = await import('amqplib');
  const connection = await amqp.connect(AMQP_URL);
  try {
    await (await connection.createChannel()).deleteExchange(exchange);
  } finally {
    await connection.close();
  }
}

/** Deletes what a partitioned handler on `queue` declared, for partitions 0 .. count-1 (and one beyond, for count changes). */
export async function deletePartitionedTopology(broker: TestBroker, queue: string, count: number): Promise<void> {
  for (let i = 0; i <= count; i++) await broker.deleteRetryTopology(`${queue}.p${i}`);
  await broker.channel.deleteQueue(`${queue}.partitions.key`);
  await broker.channel.deleteQueue(`${queue}.dlx.dead`); // the dead-letter queue the partitions share
  for (const name of [queue, `${queue}.partitions.members`]) await broker.channel.deleteExchange(name);
}

/** A suite of partitioned handlers. */
export interface PartitionSuite extends Suite {
  /** The partitions of the test's queue to delete after it: the file's count, raised by `uses`. */
  partitions: number;
  /** Says the test declares `count` partitions: the topology's deletion covers them. */
  uses(count: number): void;
}

/**
 * The frame of a partition test file: the hash exchange required (failing, not skipping, without it), and after each
 * test its apps closed and the partitioned topology of its queue deleted for `partitions` partitions (a test that
 * uses more raises it with `uses`); `options` as useSuite's.
 */
export function usePartitionSuite(
  prefix: string,
  partitions: number,
  options: Omit<SuiteOptions, 'requires' | 'deleteTopology'> = {},
): PartitionSuite {
  const suite = useSuite(prefix, {
    ...options,
    requires: requireHashExchange,
    deleteTopology: (broker, queue) => deletePartitionedTopology(broker, queue, (suite as PartitionSuite).partitions),
  }) as PartitionSuite;
  suite.partitions = partitions;
  suite.uses = (count) => void (suite.partitions = Math.max(suite.partitions, count));
  beforeEach(() => {
    suite.partitions = partitions;
  });
  return suite;
}
