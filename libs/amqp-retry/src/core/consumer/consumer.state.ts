import type { ConsumerLossVerdict } from '../connection/consumer-loss.classifier.js';

/**
 * Where a queue consumer is in its life. `held`: the channel is open and not subscribed on purpose (`hold` until
 * `release`); `down`: the channel or consumer was lost, waiting to resume; `stopping`, `handing-over`: the one stop
 * sequence (see {@link WindDown}), which `drained` ends in `stopped`, for good; `yielding`: a single-active-consumer
 * queue's `hold` runs that of `handing-over`, which `drained` ends on a fresh channel, held until `release`.
 */
export type ConsumerPhase = 'idle' | 'starting' | 'consuming' | 'held' | 'down' | 'stopping' | 'handing-over' | 'yielding' | 'stopped';

/** A consumer's whole state: its phase and what outlives a channel. */
export interface ConsumerState {
  readonly phase: ConsumerPhase;
  /** Not consuming on purpose, from `hold` until `release`, across lost channels and reconnections. */
  readonly held: boolean;
  /** The prefetch set by `release` (a circuit's trial calls); undefined: the configured one. */
  readonly pace?: number;
  /** Resumptions with backoff since the consumer last subscribed: the backoff's attempt number. */
  readonly resumeAttempt: number;
  /** A resumption with backoff is scheduled (its timer runs). */
  readonly resumeScheduled: boolean;
  /** When the consumer last resumed at once (epoch ms): such resumptions are spaced, never a loop. */
  readonly lastQuickResumeAt?: number;
  /**
   * Set for a single-active-consumer queue: `hold` and `stop` hand the queue over as `hand-over` does, since a cancel
   * would activate the next consumer while this one's handlers still run; a hold waits this long at most for them.
   */
  readonly handOverMs?: number;
}

/** What happens to a consumer: calls of its owner, and what its channel reports. */
export type ConsumerStateEvent =
  | { readonly type: 'start' }
  | { readonly type: 'opened' }
  | { readonly type: 'open-failed' }
  | { readonly type: 'subscribed' }
  | { readonly type: 'hold'; readonly reason: string }
  | { readonly type: 'release'; readonly prefetch: number; readonly configured: number }
  | { readonly type: 'lost'; readonly reason: string }
  /** What classifyConsumerLoss made of a loss: how to resume, and its one log line (`why`) and level. */
  | ({ readonly type: 'loss-verdict'; readonly now: number; readonly why: string } & Readonly<Pick<ConsumerLossVerdict, 'resume' | 'level'>>)
  | { readonly type: 'resume-failed'; readonly why: string }
  | { readonly type: 'resume-due' }
  | { readonly type: 'stop'; readonly timeoutMs: number }
  | { readonly type: 'hand-over'; readonly timeoutMs: number }
  | { readonly type: 'drained' };

/**
 * The one stop sequence, and the two ways it differs between `stop` and `hand-over` (which a single-active-consumer
 * queue's `stop` and `hold` take too).
 */
export interface WindDown {
  readonly timeoutMs: number;
  /**
   * `stop`: basic.cancel first. `hand-over`: keep the subscription until the channel closes, so that a single active
   * consumer queue activates the next one only once this one's deliveries are requeued in their places.
   */
  readonly cancelFirst: boolean;
  /**
   * `hand-over`: no delivery starts any more, and those waiting give up at once (recalled, with this reason); handlers
   * running go on and settle as usual.
   */
  readonly recall?: string;
  /** The `consumerDown` reason. */
  readonly downReason: string;
  /** Follows "after <timeoutMs> ms" in the warning logged when handlers still run after `timeoutMs`. */
  readonly lateSuffix: string;
}

/** What the consumer does on a transition, in order: its interpreter moves the bytes. */
export type ConsumerEffect =
  | { readonly type: 'open-channel' }
  /** A channel opened after the stop sequence began: close it, subscribing nothing. */
  | { readonly type: 'close-channel' }
  | { readonly type: 'subscribe' }
  /** basic.cancel, the channel stays; `downReason`: tell `consumerDown` if a consumer was cancelled. */
  | { readonly type: 'cancel-consumer'; readonly downReason?: string }
  /** Cancel the consumer subscribed now (if any) and subscribe again, at the current pace, once a start in progress is done. */
  | { readonly type: 'resubscribe' }
  | { readonly type: 'announce-up' }
  | { readonly type: 'announce-down'; readonly reason: string }
  /** Log `why` at `level` and consume again on a fresh channel now. */
  | { readonly type: 'resume-now'; readonly why: string; readonly level: 'warn' | 'error' }
  /** Log `why` and declare the topology again, then resume, after the backoff of this attempt. */
  | { readonly type: 'schedule-resume'; readonly attempt: number; readonly why: string }
  | { readonly type: 'redeclare-and-start' }
  | { readonly type: 'cancel-resume' }
  | ({ readonly type: 'wind-down' } & WindDown);

/** A transition's outcome. `illegal` names an event the phase cannot take: the state is unchanged, nothing is done. */
export interface ConsumerTransition {
  readonly state: ConsumerState;
  readonly effects: readonly ConsumerEffect[];
  readonly illegal?: string;
}

/** The least time between two resumptions at once after a lost consumer; a quicker loss resumes with backoff. */
export const QUICK_RESUME_SPACING_MS = 1000;

/** A consumer before `start`. */
export const INITIAL_CONSUMER_STATE: ConsumerState = { phase: 'idle', held: false, resumeAttempt: 0, resumeScheduled: false };

const NONE: readonly ConsumerEffect[] = [];

/** True once the stop sequence has begun (`stopping`, `handing-over`) or ended (`stopped`). */
export const isFinishing = (phase: ConsumerPhase): boolean => phase === 'stopping' || phase === 'handing-over' || phase === 'stopped';

const same = (state: ConsumerState): ConsumerTransition => ({ state, effects: NONE });
const to = (state: ConsumerState, changes: Partial<ConsumerState>, effects: readonly ConsumerEffect[] = NONE): ConsumerTransition => ({
  state: { ...state, ...changes },
  effects,
});
const illegal = (state: ConsumerState, event: ConsumerStateEvent): ConsumerTransition => ({
  state,
  effects: NONE,
  illegal: `a consumer ${state.phase} does not take "${event.type}"`,
});

/** Schedules a resumption with backoff, unless one is scheduled already. */
function scheduleResume(state: ConsumerState, why: string): ConsumerTransition {
  if (state.resumeScheduled) return same(state);
  const attempt = state.resumeAttempt + 1;
  return to(state, { resumeAttempt: attempt, resumeScheduled: true }, [{ type: 'schedule-resume', attempt, why }]);
}

/** The stop sequence, entered from any phase before it: `stop`, `hand-over` and a single-active-consumer queue's `hold` share it. */
function windDown(state: ConsumerState, phase: 'stopping' | 'handing-over' | 'yielding', plan: WindDown): ConsumerTransition {
  const effects: ConsumerEffect[] = state.resumeScheduled ? [{ type: 'cancel-resume' }] : [];
  effects.push({ type: 'wind-down', ...plan });
  return to(state, { phase, resumeScheduled: false }, effects);
}

/**
 * The plan of `stop` (no `recall`): basic.cancel first; of `hand-over` (`recall`: the reason of those waiting): the
 * subscription stays until the channel closes. `downReason`, `lateSuffix` as WindDown's.
 */
const windDownPlan = (timeoutMs: number, downReason: string, lateSuffix: string, recall?: string): WindDown => ({
  timeoutMs,
  cancelFirst: recall === undefined,
  ...(recall !== undefined && { recall }),
  downReason,
  lateSuffix,
});

const STOPPING = 'the application is stopping';

/**
 * A queue consumer's state machine, pure: the next state and the effects to carry out, in order, which
 * amqp/queue.consumer.ts interprets. Late events from I/O started before a change (a channel opening after `stop`) are
 * legal and undo what they would do; an event that cannot happen in a phase is `illegal`.
 * @example transition(INITIAL_CONSUMER_STATE, { type: 'start' }) // { state: { phase: 'starting', ... }, effects: [{ type: 'open-channel' }] }
 */
export function transition(state: ConsumerState, event: ConsumerStateEvent): ConsumerTransition {
  const { phase } = state;
  const finishing = isFinishing(phase);
  const windingDown = phase === 'stopping' || phase === 'handing-over' || phase === 'yielding';
  switch (event.type) {
    case 'start':
      if (phase === 'idle' || phase === 'down') return to(state, { phase: 'starting' }, [{ type: 'open-channel' }]);
      return same(state);
    case 'opened':
      if (windingDown) return to(state, {}, [{ type: 'close-channel' }]);
      if (phase !== 'starting') return illegal(state, event);
      if (state.held) return to(state, { phase: 'held', resumeAttempt: 0 });
      return to(state, { phase: 'consuming' }, [{ type: 'subscribe' }]);
    case 'open-failed':
      if (phase === 'starting') return to(state, { phase: 'down' });
      return windingDown ? same(state) : illegal(state, event);
    case 'subscribed':
      if (phase === 'consuming') return to(state, { resumeAttempt: 0 }, [{ type: 'announce-up' }]);
      // Handing over (or yielding): no cancel, which would activate a single active consumer queue's next consumer
      // before this channel's close returns the deliveries it keeps unhandled; that close ends the subscription.
      if (phase === 'handing-over' || phase === 'yielding') return same(state);
      if (phase === 'held' || phase === 'stopping') return to(state, {}, [{ type: 'cancel-consumer' }]);
      return illegal(state, event);
    case 'hold':
      if (finishing || state.held) return same(state);
      if (phase === 'consuming' && state.handOverMs !== undefined) {
        return windDown({ ...state, held: true }, 'yielding', windDownPlan(state.handOverMs, event.reason, ' of holding', event.reason));
      }
      if (phase === 'consuming') return to(state, { phase: 'held', held: true }, [{ type: 'cancel-consumer', downReason: event.reason }]);
      return to(state, { held: true });
    case 'release': {
      if (finishing) return same(state);
      const changed = event.prefetch !== (state.pace ?? event.configured);
      const pace = event.prefetch === event.configured ? undefined : event.prefetch;
      if (phase === 'held') return to(state, { phase: 'consuming', held: false, pace }, [{ type: 'resubscribe' }]);
      if ((phase === 'consuming' || phase === 'starting') && changed) return to(state, { held: false, pace }, [{ type: 'resubscribe' }]);
      return to(state, { held: false, pace });
    }
    case 'lost':
      if (phase === 'idle') return illegal(state, event);
      if (finishing || phase === 'down' || phase === 'yielding') return same(state);
      return to(state, { phase: 'down' }, phase === 'held' ? NONE : [{ type: 'announce-down', reason: event.reason }]);
    case 'loss-verdict':
      if (phase !== 'down' || event.resume === 'connection') return same(state);
      if (event.resume === 'at-once' && (state.lastQuickResumeAt === undefined || event.now - state.lastQuickResumeAt >= QUICK_RESUME_SPACING_MS)) {
        return to(state, { lastQuickResumeAt: event.now }, [{ type: 'resume-now', why: event.why, level: event.level }]);
      }
      return scheduleResume(state, event.why);
    case 'resume-failed':
      return phase === 'down' ? scheduleResume(state, event.why) : same(state);
    case 'resume-due':
      if (!state.resumeScheduled) return illegal(state, event);
      return to(state, { resumeScheduled: false }, phase === 'down' ? [{ type: 'redeclare-and-start' }] : NONE);
    case 'stop':
      if (finishing) return same(state);
      if (phase === 'yielding') return to(state, { phase: 'handing-over' }); // its wind-down goes on, and ends the consumer
      if (state.handOverMs !== undefined) return windDown(state, 'handing-over', windDownPlan(event.timeoutMs, STOPPING, '', STOPPING));
      return windDown(state, 'stopping', windDownPlan(event.timeoutMs, STOPPING, ''));
    case 'hand-over':
      if (finishing) return same(state);
      if (phase === 'yielding') return to(state, { phase: 'handing-over' });
      return windDown(
        state,
        'handing-over',
        windDownPlan(event.timeoutMs, 'handed over to another consumer', ' of handing over', 'the queue is handed over to another consumer'),
      );
    case 'drained':
      if (phase === 'stopping' || phase === 'handing-over') return to(state, { phase: 'stopped' });
      // The queue is declared again before a fresh channel: what happened to it while the handlers finished (deleted,
      // declared by someone else without its dead-letter exchange) is not seen by a loss verdict in this phase.
      if (phase === 'yielding') return to(state, { phase: 'down' }, [{ type: 'redeclare-and-start' }]);
      return illegal(state, event);
  }
}
