/**
 * What the page's API answers, as the browser receives it: the server's types (core/parking/parked-messages.types.ts), with
 * dates as the ISO strings JSON makes of them. Type-only imports: nothing of the server is bundled.
 */
import type { HandlerQueueState, ParkedMessageView, ParkedSummary, PurgeResult, ReplayResult } from '../../../core/parking/parked-messages.types.js';
import type { QueueFlowStatus } from '../../../core/breaker/queue.state.js';
import type { PartitionsStatus } from '../../../core/partitions/partitions.status.js';
import type { FleetInstance, FleetSummary, QueueHistory } from '../../../core/observe/heartbeat/fleet.history.js';

export type QueueState = HandlerQueueState;
export type QueueCounts = NonNullable<HandlerQueueState['activity']>;
export type Summary = ParkedSummary;
/** A handler queue's consumption (`api/queue-states`): running, half-open, open (its breaker) or paused, by whom, since when. */
export type FlowState = QueueFlowStatus;
/** A partitioned handler (`api/partitions`): its partitions, each one's owner and ready depth, as this instance sees them. */
export type PartitionsState = PartitionsStatus;
export type MessageView = Omit<ParkedMessageView, 'parkedAt'> & { parkedAt?: string };
export interface MessagePage {
  total: number;
  items: MessageView[];
}
/** A replay's or a purge's answer (or their sum over several parking queues). */
export type ActionResult = Partial<Omit<ReplayResult, 'matched'> & Omit<PurgeResult, 'matched'>> & { matched: number };

/** The page's filter, as the form and the API's query string spell it (times as ISO strings). */
export interface Filter {
  queue?: string;
  reason?: string;
  error?: string;
  text?: string;
  since?: string;
  until?: string;
}

/** `api/fleet`: the application's instances from their heartbeats, and the summary strip (times in epoch ms). */
export interface FleetState {
  /** The serving instance's clock: every age shown is counted from it. */
  now: number;
  missedBeats: number;
  intervalMs: number;
  instances: FleetInstance[];
  summary: FleetSummary;
}
/** `api/history`: per queue, one point a minute. */
export interface HistoryState {
  now: number;
  queues: QueueHistory[];
}
export type { FleetInstance, FleetSummary, HistoryPoint, QueueHistory } from '../../../core/observe/heartbeat/fleet.history.js';
export type { BreakerCause } from '../../../core/observe/heartbeat/heartbeat.types.js';
