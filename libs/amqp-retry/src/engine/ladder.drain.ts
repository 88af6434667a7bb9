import { DelayForwardHandler } from '../pipeline/delay.forwarder.js';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import type { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import type { MessageParker, ParkTarget } from '../pipeline/park-route.steps.js';
import { QueueConsumer } from '../amqp/queue.consumer.js';
import { queueExists } from '../amqp/queue-exists.probe.js';
import { planDelayTopology, type DelayTopology } from '../core/delivery/delay.plan.js';
import { errorMessage } from '../core/text/error-message.format.js';
import type { ReconnectPolicy } from '../core/connection/reconnect.policy.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';

export interface LadderDrainDeps {
  connection: AmqpConnection;
  forwarder: ConfirmPublisher;
  parker: MessageParker;
  logger: RetryLogger;
  resume: ReconnectPolicy;
  prefetch: number;
  /** Where an undeliverable message is parked: the error queue of this application's own ladder. */
  park: ParkTarget;
}

/**
 * A forwarder for the ladder of the other queue type under the same prefix: it holds delayed messages published before
 * the queue type changed, which nothing else would forward once due. It runs until that ladder is deleted; nothing is
 * declared for it. Undefined when there is none, or when the check failed (a warning says so: start-up goes on).
 */
export async function drainOtherLadder(ladder: DelayTopology, configuredPrefix: string, deps: LadderDrainDeps): Promise<QueueConsumer | undefined> {
  const other = planDelayTopology(configuredPrefix, ladder.queueType === 'quorum' ? 'classic' : 'quorum');
  const { connection, logger } = deps;
  const open = () => connection.createChannel('delay ladder check', true);
  const found = await queueExists(open, other.readyQueue).catch((error: unknown) => {
    logger.warn(`Could not check for a ${other.queueType} delay ladder "${other.prefix}" (${errorMessage(error)}); not forwarding from one`);
    return false;
  });
  if (!found) return undefined;
  let consumer: QueueConsumer | undefined = undefined;
  let stopped = false;
  const stillThere = async () => {
    if (await queueExists(open, other.readyQueue)) return;
    const gone = `The ${other.queueType} delay ladder "${other.prefix}" was deleted; no longer forwarding from it`;
    if (consumer && !stopped) logger.log(gone);
    stopped = true;
    void consumer?.stop(0);
    throw new Error(gone);
  };
  const forward = new DelayForwardHandler(other, deps.forwarder, deps.parker, deps.park, logger);
  consumer = new QueueConsumer(
    { queue: other.readyQueue, prefetch: deps.prefetch, connection, logger, resume: deps.resume, redeclare: stillThere },
    forward.handle,
  );
  logger.log(
    `Found a ${other.queueType} delay ladder "${other.prefix}" beside this ${ladder.queueType} one: forwarding what is due in it as well ` +
      '(delayed under an earlier configuration, or by another application); delete it once empty and unused',
  );
  return consumer;
}
