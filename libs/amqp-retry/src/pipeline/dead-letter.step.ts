import type { ConsumeMessage } from 'amqplib';
import type { Settle } from '../amqp/queue.consumer.js';
import type { DeadLetterAction } from '../core/config/queue-limits.config.js';
import { deathQueueOf, decideDeadLetter } from '../core/delivery/dead-letter.decision.js';
import { firstRejection, readDeathHistory } from '../core/delivery/x-death.parser.js';
import { retriedFirstFailureHeaders } from '../core/delivery/first-failure.headers.js';
import { republishProperties } from '../core/message/message.properties.js';
import { BrokerHeader } from '../core/headers/header.names.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { publishCopyThenAck, type MessageParker, type ParkTarget } from './park-route.steps.js';

/** Where a queue's dead letters go: its parking queue, and its first tier for a first failure the sort sent here. */
export interface DeadLetterTarget extends ParkTarget {
  firstTier: string;
}

/** At most one line a minute per queue for dropped messages, with the count since the last line. */
const DROP_LOG_SPACING_MS = 60_000;

/**
 * The consumer of a handler's dead-letter queue: what expired, was pushed out by a length limit, or passed a quorum
 * queue's delivery limit. Each is parked with its reason, or, with `onExpired: 'drop'`, acked, counted and logged at
 * most once a minute. A first failure that came here for an old death (decideDeadLetter) goes on to the queue's first
 * tier, as a confirmed copy with its death history cut off. `targets` maps each queue whose dead letters come here to
 * where its messages park; `others` gives the target of a further queue by name (undefined for a queue that is none of
 * them): a partitioned handler's partitions of another count, and its queue before partitions, share this dead-letter
 * queue. The first of `targets` is named for a message that died in none of them.
 */
export class DeadLetterStep {
  private droppedSinceLine = 0;
  private lastLineAt = Number.NEGATIVE_INFINITY;
  private readonly fallback: string;

  constructor(
    private readonly targets: ReadonlyMap<string, DeadLetterTarget>,
    private readonly onExpired: DeadLetterAction,
    private readonly parker: MessageParker,
    private readonly logger: RetryLogger,
    private readonly observers?: ObserverHub,
    private readonly now: () => number = Date.now,
    private readonly others: (queue: string) => DeadLetterTarget | undefined = () => undefined,
  ) {
    const [first] = targets.keys();
    if (first === undefined) throw new Error('DeadLetterStep needs at least one queue');
    this.fallback = first;
  }

  readonly handle = async (message: ConsumeMessage, settle: Settle, signal: AbortSignal): Promise<void> => {
    const headers = message.properties.headers as Record<string, unknown> | undefined;
    const targetOf = (name: string) => this.targets.get(name) ?? this.others(name);
    const queue = deathQueueOf(headers, (name) => targetOf(name) !== undefined) ?? this.fallback;
    const target = targetOf(queue) as DeadLetterTarget;
    const outcome = decideDeadLetter(headers, queue, this.onExpired);
    if (outcome.action === 'retry') return this.toFirstTier(message, settle, queue, target, signal);
    if (outcome.action === 'drop') {
      settle.ack();
      if (this.observers?.active) this.observers.emit('dropped', { queue, reason: outcome.reason, message });
      this.logDrop(queue);
      return;
    }
    const history = readDeathHistory(headers?.[BrokerHeader.death]);
    const deaths = history.ok ? history.deaths : [];
    // Where it was published: the death in the queue names it (the delivery itself came by the dead-letter exchange).
    const death = deaths.find((d) => d.queue === queue && d.reason !== 'rejected');
    const { reason, error, handlerCalls } = outcome;
    const route = death ? { deliveredExchange: death.exchange ?? '', deliveredRoutingKey: death.routingKeys[0] ?? queue } : {};
    await this.parker.park(message, settle, target, { queue, reason, error, handlerCalls, deaths, ...route }, signal);
  };

  private async toFirstTier(message: ConsumeMessage, settle: Settle, queue: string, target: DeadLetterTarget, signal: AbortSignal): Promise<void> {
    const { headers } = message.properties as { headers?: Record<string, unknown> };
    const history = readDeathHistory(headers?.[BrokerHeader.death]);
    const first = history.ok ? firstRejection(history.deaths, queue) : undefined;
    const copy = {
      exchange: '',
      routingKey: target.firstTier,
      options: republishProperties(message.properties, retriedFirstFailureHeaders(headers, queue, first)),
      what: { name: `a failed message from "${queue}"`, target: `the retry tier "${target.firstTier}"` },
    };
    const deps = { publisher: this.parker.publisher, logger: this.logger, redeclare: target.redeclare };
    await publishCopyThenAck(deps, message, settle, copy, signal);
  }

  private logDrop(queue: string): void {
    this.droppedSinceLine++;
    const now = this.now();
    if (now - this.lastLineAt < DROP_LOG_SPACING_MS) return;
    const count = this.droppedSinceLine;
    this.droppedSinceLine = 0;
    this.lastLineAt = now;
    this.logger.warn(
      `"${queue}": dropped ${count === 1 ? '1 message that' : `${count} messages that`} expired or ${count === 1 ? 'was' : 'were'} pushed out by a length limit (onExpired: 'drop'); this line comes at most once a minute, with the count since the last`,
    );
  }
}
