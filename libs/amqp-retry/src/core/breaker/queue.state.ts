/** Closed: deliveries flow. Open: the queue is not consumed. Half-open: `halfOpenCalls` trial deliveries. */
export type CircuitState = 'closed' | 'open' | 'half-open';

/**
 * What a handler queue's consumer does, as operators see it: running (closed circuit or none), half-open, open (the
 * breaker stopped it), paused (someone did). A pause wins over the circuit, whatever it does meanwhile.
 */
export type QueueState = 'running' | 'half-open' | 'open' | 'paused';

/** Numbers for a gauge, in order of severity. */
export const QUEUE_STATE_VALUE: Readonly<Record<QueueState, number>> = { running: 0, 'half-open': 1, open: 2, paused: 3 };

/** A handler queue's flow, for the page, the CLI, health checks and `RetryEngine.queueStates()`. */
export interface QueueFlowStatus {
  /** The handler queue. */
  queue: string;
  /** Its consumer's state: running, half-open, open or paused. */
  state: QueueState;
  /** The circuit breaker's own state, when the queue has one (a paused queue's circuit may be open meanwhile). */
  circuit?: CircuitState;
  /** While the circuit is open: when it half-opens (ISO 8601). */
  openUntil?: string;
  /** While paused: who paused it, why, and since when (ISO 8601). */
  paused?: {
    /** Who paused it. */
    by: string;
    /** Why, when given. */
    reason?: string;
    /** Since when (ISO 8601). */
    since: string;
  };
  /** The rate limit, when the handler has one: at most `calls` per `per`. */
  rateLimit?: {
    /** Handler calls allowed in each `per`. */
    calls: number;
    /** The period, as a duration (for example '1s'). */
    per: string;
  };
}

/** Who paused a queue, why, and since when (epoch ms). */
export interface PauseRecord {
  by: string;
  reason?: string;
  since: number;
}

export function queueStateOf(paused: PauseRecord | undefined, circuit: CircuitState | undefined): QueueState {
  if (paused) return 'paused';
  if (circuit === 'open' || circuit === 'half-open') return circuit;
  return 'running';
}

const MAX_TEXT = 200;

/** Reads who pauses and why: printable text of at most 200 characters each (they reach logs and the page), else a problem. */
export function readPauseBy(by: unknown, reason: unknown): { by: string; reason?: string } | { problem: string } {
  const absent = (value: unknown): boolean => value === undefined || value === null || value === '';
  const printable = (value: unknown): value is string =>
    // eslint-disable-next-line no-control-regex
    typeof value === 'string' && value.length <= MAX_TEXT && !/[\u0000-\u001f\u007f-\u009f]/.test(value) && value.trim() !== '';
  const unprintable = (name: string) => ({ problem: `${name} must be printable text of 1 to ${MAX_TEXT} characters` });
  if (absent(by)) return { problem: 'by is missing' };
  if (!printable(by)) return unprintable('by');
  if (absent(reason)) return { by: by.trim() };
  if (!printable(reason)) return unprintable('reason');
  return { by: by.trim(), reason: reason.trim() };
}

/** The word the page's State column shows for a queue's state: nothing while running, else the state and who paused. */
export function queueStateWord(state: QueueState, pausedBy?: string): string | undefined {
  if (state === 'running') return undefined;
  if (state === 'paused') return pausedBy === undefined ? 'paused' : `paused by ${pausedBy}`;
  return `breaker ${state}`;
}
