import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { declareTopology } from '../amqp/topology.declarer.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import { otherPartitionQueue } from '../core/partitions/partition.plan.js';
import { planRetryTopology, tierQueues } from '../core/topology/retry-topology.plan.js';
import type { DeadLetterTarget } from '../pipeline/dead-letter.step.js';

/**
 * Where the dead-letter queue that a partitioned handler's partitions share (`<queue>.dlx.dead`) sends what died in a
 * queue of the handler beyond this instance's partitions: a partition of a larger count (run by another instance in a
 * rolling change, or retired) or the queue of the handler before partitions (otherPartitionQueue). Such a message is
 * handled as the dead-letter consumer of an instance running that queue would: parked in that queue's own parking
 * queue with the reason of its death, or (a first failure the death sort sent there) sent on to that queue's first
 * tier. A replay from that parking queue goes back to that queue, whose owner or mover takes it. Any other name is
 * none of these (undefined).
 *
 * Should the parking queue or first tier be gone, only those two are declared again (as that queue's topology has
 * them), never the queue itself or a binding: a retired partition is not brought back into the hash exchange.
 */
export function otherDeadLetterTargets(config: HandlerConfig, connection: AmqpConnection): (queue: string) => DeadLetterTarget | undefined {
  const known = new Map<string, DeadLetterTarget | undefined>(); // at most MAX_PARTITIONS + 1 names: the queue and its partitions
  return (queue) => {
    if (known.has(queue)) return known.get(queue);
    const other = otherPartitionQueue(config, queue);
    const target = other && targetOf(other, connection);
    if (other) known.set(queue, target);
    return target;
  };
}

function targetOf(config: HandlerConfig, connection: AmqpConnection): DeadLetterTarget {
  const firstTier = tierQueues(config)[0];
  const plan = planRetryTopology(config);
  const own = new Set([config.errorQueue, firstTier]);
  const redeclare = () => declareTopology(connection, { exchanges: [], queues: plan.queues.filter((q) => own.has(q.name)), bindings: [] }, false);
  return { errorQueue: config.errorQueue, firstTier, redeclare };
}
