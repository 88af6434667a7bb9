import { formatDuration } from '../time/duration.reader.js';

/**
 * What took a consumer's deliveries away: `cancelled` (`basic.cancel`: a deleted queue, or on 4.3 a quorum queue's
 * consumer timeout) or `channel-closed` (`brokerReason` when the broker closed it alone, as 3.10 and 4.0 do on a
 * consumer timeout with a 406; without one, the connection died).
 */
export interface ConsumerLossEvent {
  event: 'cancelled' | 'channel-closed';
  queue: string;
  brokerReason?: string;
  /** Deliveries of the channel not settled yet: their handlers run or wait. */
  unsettled: number;
  /** How long the oldest of them has been held, if any. */
  oldestHeldMs?: number;
  /** For `cancelled`: whether the queue still exists (a passive declare after the cancel); undefined if unknown. */
  queueExists?: boolean;
  /**
   * For `cancelled`, when the queue exists: whether it still takes the declaration of the handler's plan (false: a
   * 406, someone deleted and re-created it with other arguments, e.g. without the dead-letter exchange); undefined if unknown or not checked.
   */
  queueMatches?: boolean;
}

/** What the consumer does about it. */
export interface ConsumerLossVerdict {
  cause: 'consumer-timeout' | 'queue-deleted' | 'queue-mismatch' | 'consumer-cancelled' | 'channel-closed' | 'connection-lost';
  /** The broker took the channel's deliveries back: their settlements count for nothing, their signals abort. */
  lost: boolean;
  /** `at-once`: consume again on a fresh channel now; `backoff`: declare again and resume with backoff; `connection`: the connection's recovery restarts the consumer. */
  resume: 'at-once' | 'backoff' | 'connection';
  /** The one line logged about it, naming the real cause; empty when nothing is to be logged. */
  line: string;
  level: 'warn' | 'error';
}

// RabbitMQ 3.8.15+ and 4.0: "delivery acknowledgement on channel 2 timed out. Timeout value used: 2000 ms. ..."
const ACK_TIMEOUT = /delivery acknowledgement on channel \d+ timed out(?:\. Timeout value used: (\d+) ms)?/;

const ADVICE =
  'give the handler a timeout shorter than the consumer timeout (RetryWithBackoff `timeout`), or raise the consumer timeout (policy `consumer-timeout`, `consumer_timeout` in rabbitmq.conf)';

/** A consumer timeout, however the broker ended it (a closed channel, or on 4.3 a cancel): resumed at once, a warning. */
const consumerTimeout = (line: string): ConsumerLossVerdict => ({ cause: 'consumer-timeout', lost: true, resume: 'at-once', level: 'warn', line });

/** A loss the consumer cannot take for a passing one: declared again and resumed with backoff, an error. */
const BACKOFF = { resume: 'backoff', level: 'error' } as const;
const redeclare = (cause: ConsumerLossVerdict['cause'], lost: boolean, line: string): ConsumerLossVerdict => ({ cause, lost, line, ...BACKOFF });

/**
 * Classifies the loss of a consumer's deliveries, so that the real cause is logged once: a consumer timeout resumes on
 * a fresh channel at once, a deleted queue, or one re-created with other arguments, is declared again with backoff
 * (which refuses the latter with TopologyMismatchError until it is fixed). Never throws.
 * @example classifyConsumerLoss({ event: 'cancelled', queue: 'orders', unsettled: 1, oldestHeldMs: 2004, queueExists: true })
 * // { cause: 'consumer-timeout', lost: true, resume: 'at-once', level: 'warn', line: '"orders": the broker cancelled ...' }
 */
export function classifyConsumerLoss(input: ConsumerLossEvent): ConsumerLossVerdict {
  const { queue, unsettled, oldestHeldMs } = input;
  const held = oldestHeldMs === undefined ? '' : `, the oldest held for ${formatDuration(Math.max(0, Math.round(oldestHeldMs)))}`;
  const deliveries = `${unsettled} unsettled ${unsettled === 1 ? 'delivery' : 'deliveries'}${held}`;
  if (input.event === 'channel-closed') {
    if (input.brokerReason === undefined) return { cause: 'connection-lost', lost: true, resume: 'connection', line: '', level: 'warn' };
    const timeout = ACK_TIMEOUT.exec(input.brokerReason);
    if (timeout) {
      const limit = timeout[1] === undefined ? '' : ` of ${formatDuration(Number(timeout[1]))}`;
      return consumerTimeout(
        `"${queue}": the broker's consumer timeout${limit} expired and it closed the consuming channel, taking back ${deliveries}: ` +
          `the broker delivers them again, their handlers' signals are aborted, and consuming resumes on a new channel at once; ${ADVICE}`,
      );
    }
    return redeclare('channel-closed', true, `The broker closed the channel consuming "${queue}" (${input.brokerReason}), taking back ${deliveries}`);
  }
  if (input.queueExists === false) return redeclare('queue-deleted', true, `The broker cancelled the consumer of "${queue}": the queue was deleted`);
  if (input.queueExists === true && input.queueMatches === false) {
    // Consumed as it is, a failure would be nacked to no dead-letter exchange and lost: refused, as a reconnection
    // refuses it (TopologyMismatchError), and declared again with backoff until the queue is the handler's again.
    return redeclare(
      'queue-mismatch',
      unsettled > 0,
      `The broker cancelled the consumer of "${queue}", and the queue there now refuses the handler's arguments (re-created by someone else?): not consuming it until it is declared as configured`,
    );
  }
  if (unsettled > 0 && input.queueExists === true) {
    return consumerTimeout(
      `"${queue}": the broker cancelled the consumer with ${deliveries} while the queue still exists: a consumer timeout ` +
        `(RabbitMQ 4.3 cancels the consumer of a quorum queue and takes its deliveries back). The broker delivers them again, ` +
        `their handlers' signals are aborted, and consuming resumes on a new channel at once; ${ADVICE}`,
    );
  }
  return {
    cause: 'consumer-cancelled',
    lost: unsettled > 0,
    resume: input.queueExists === true ? 'at-once' : 'backoff',
    level: 'error',
    line: `The broker cancelled the consumer of "${queue}"${unsettled > 0 ? ` with ${deliveries}` : ''}${input.queueExists === undefined ? ' (was the queue deleted?)' : ''}`,
  };
}
