import {
  type ConsumerPhase,
  type ConsumerState,
  type ConsumerStateEvent,
  INITIAL_CONSUMER_STATE,
  QUICK_RESUME_SPACING_MS,
  transition,
} from './consumer.state.js';

const PHASES: readonly ConsumerPhase[] = ['idle', 'starting', 'consuming', 'held', 'down', 'stopping', 'handing-over', 'yielding', 'stopped'];

const inPhase = (phase: ConsumerPhase, changes: Partial<ConsumerState> = {}): ConsumerState => ({
  ...INITIAL_CONSUMER_STATE,
  phase,
  held: phase === 'held' || phase === 'yielding',
  ...changes,
});

/** What a transition gives, in short: "next-phase: effect, effect", or "illegal". */
function outcome(state: ConsumerState, event: ConsumerStateEvent): string {
  const next = transition(state, event);
  if (next.illegal !== undefined) {
    expect(next.state).toBe(state);
    expect(next.effects).toEqual([]);
    return 'illegal';
  }
  return `${next.state.phase}: ${next.effects.map((effect) => effect.type).join(', ')}`.trimEnd();
}

const verdict = (resume: 'at-once' | 'backoff' | 'connection'): ConsumerStateEvent => ({
  type: 'loss-verdict',
  resume,
  now: 10_000,
  why: 'lost',
  level: 'warn',
});

/** Every event in every phase: the next phase and the effects, in order. The columns follow PHASES. */
const TABLE: ReadonlyArray<[string, ConsumerStateEvent, Partial<ConsumerState>, readonly string[]]> = [
  [
    'start',
    { type: 'start' },
    {},
    ['starting: open-channel', 'starting:', 'consuming:', 'held:', 'starting: open-channel', 'stopping:', 'handing-over:', 'yielding:', 'stopped:'],
  ],
  [
    'opened',
    { type: 'opened' },
    {},
    [
      'illegal',
      'consuming: subscribe',
      'illegal',
      'illegal',
      'illegal',
      'stopping: close-channel',
      'handing-over: close-channel',
      'yielding: close-channel',
      'illegal',
    ],
  ],
  [
    'open-failed',
    { type: 'open-failed' },
    {},
    ['illegal', 'down:', 'illegal', 'illegal', 'illegal', 'stopping:', 'handing-over:', 'yielding:', 'illegal'],
  ],
  [
    'subscribed',
    { type: 'subscribed' },
    {},
    [
      'illegal',
      'illegal',
      'consuming: announce-up',
      'held: cancel-consumer',
      'illegal',
      'stopping: cancel-consumer',
      'handing-over:',
      'yielding:',
      'illegal',
    ],
  ],
  [
    'hold',
    { type: 'hold', reason: 'paused' },
    {},
    ['idle:', 'starting:', 'held: cancel-consumer', 'held:', 'down:', 'stopping:', 'handing-over:', 'yielding:', 'stopped:'],
  ],
  [
    'release at the same pace',
    { type: 'release', prefetch: 10, configured: 10 },
    {},
    ['idle:', 'starting:', 'consuming:', 'consuming: resubscribe', 'down:', 'stopping:', 'handing-over:', 'yielding:', 'stopped:'],
  ],
  [
    'release at another pace',
    { type: 'release', prefetch: 2, configured: 10 },
    {},
    [
      'idle:',
      'starting: resubscribe',
      'consuming: resubscribe',
      'consuming: resubscribe',
      'down:',
      'stopping:',
      'handing-over:',
      'yielding:',
      'stopped:',
    ],
  ],
  [
    'lost',
    { type: 'lost', reason: 'closed' },
    {},
    ['illegal', 'down: announce-down', 'down: announce-down', 'down:', 'down:', 'stopping:', 'handing-over:', 'yielding:', 'stopped:'],
  ],
  [
    'a loss to resume at once',
    verdict('at-once'),
    {},
    ['idle:', 'starting:', 'consuming:', 'held:', 'down: resume-now', 'stopping:', 'handing-over:', 'yielding:', 'stopped:'],
  ],
  [
    'a loss to resume with backoff',
    verdict('backoff'),
    {},
    ['idle:', 'starting:', 'consuming:', 'held:', 'down: schedule-resume', 'stopping:', 'handing-over:', 'yielding:', 'stopped:'],
  ],
  [
    'a lost connection',
    verdict('connection'),
    {},
    ['idle:', 'starting:', 'consuming:', 'held:', 'down:', 'stopping:', 'handing-over:', 'yielding:', 'stopped:'],
  ],
  [
    'resume-failed',
    { type: 'resume-failed', why: 'no queue' },
    {},
    ['idle:', 'starting:', 'consuming:', 'held:', 'down: schedule-resume', 'stopping:', 'handing-over:', 'yielding:', 'stopped:'],
  ],
  [
    'resume-due',
    { type: 'resume-due' },
    { resumeScheduled: true },
    ['idle:', 'starting:', 'consuming:', 'held:', 'down: redeclare-and-start', 'stopping:', 'handing-over:', 'yielding:', 'stopped:'],
  ],
  [
    'resume-due with none scheduled',
    { type: 'resume-due' },
    {},
    ['illegal', 'illegal', 'illegal', 'illegal', 'illegal', 'illegal', 'illegal', 'illegal', 'illegal'],
  ],
  [
    'stop',
    { type: 'stop', timeoutMs: 500 },
    {},
    [
      'stopping: wind-down',
      'stopping: wind-down',
      'stopping: wind-down',
      'stopping: wind-down',
      'stopping: wind-down',
      'stopping:',
      'handing-over:',
      'handing-over:',
      'stopped:',
    ],
  ],
  [
    'hand-over',
    { type: 'hand-over', timeoutMs: 500 },
    {},
    [
      'handing-over: wind-down',
      'handing-over: wind-down',
      'handing-over: wind-down',
      'handing-over: wind-down',
      'handing-over: wind-down',
      'stopping:',
      'handing-over:',
      'handing-over:',
      'stopped:',
    ],
  ],
  [
    'hold, on a single-active-consumer queue',
    { type: 'hold', reason: 'paused' },
    { handOverMs: 800 },
    ['idle:', 'starting:', 'yielding: wind-down', 'held:', 'down:', 'stopping:', 'handing-over:', 'yielding:', 'stopped:'],
  ],
  [
    'stop, on a single-active-consumer queue',
    { type: 'stop', timeoutMs: 500 },
    { handOverMs: 800 },
    [
      'handing-over: wind-down',
      'handing-over: wind-down',
      'handing-over: wind-down',
      'handing-over: wind-down',
      'handing-over: wind-down',
      'stopping:',
      'handing-over:',
      'handing-over:',
      'stopped:',
    ],
  ],
  [
    'drained',
    { type: 'drained' },
    {},
    ['illegal', 'illegal', 'illegal', 'illegal', 'illegal', 'stopped:', 'stopped:', 'down: redeclare-and-start', 'illegal'],
  ],
];

describe('the consumer state machine', () => {
  describe.each(TABLE)('on %s', (_name, event, changes, expected) => {
    it.each(PHASES.map((phase, i) => [phase, expected[i]]))('from %s: %s', (phase, result) => {
      expect(outcome(inPhase(phase, changes), event)).toBe(result);
    });
  });

  it('names the phase and the event of an illegal one', () => {
    expect(transition(inPhase('idle'), { type: 'drained' }).illegal).toBe('a consumer idle does not take "drained"');
  });

  it('opens a channel without subscribing while held, and keeps the hold across a lost channel', () => {
    let state = transition(inPhase('consuming'), { type: 'hold', reason: 'paused' }).state;
    expect(state).toMatchObject({ phase: 'held', held: true });
    state = transition(state, { type: 'lost', reason: 'closed' }).state;
    expect(state).toMatchObject({ phase: 'down', held: true });
    state = transition(state, { type: 'start' }).state;
    expect(outcome(state, { type: 'opened' })).toBe('held:');
    expect(transition(inPhase('starting', { held: true }), { type: 'hold', reason: 'again' }).effects).toEqual([]);
  });

  it('tells consumerDown with the reason of the hold that cancelled the consumer', () => {
    expect(transition(inPhase('consuming'), { type: 'hold', reason: 'the circuit opened' }).effects).toEqual([
      { type: 'cancel-consumer', downReason: 'the circuit opened' },
    ]);
  });

  it('keeps the pace of release() apart from the configured prefetch, and forgets it at the configured one', () => {
    const slow = transition(inPhase('held'), { type: 'release', prefetch: 2, configured: 10 }).state;
    expect(slow).toMatchObject({ phase: 'consuming', held: false, pace: 2 });
    expect(transition(slow, { type: 'release', prefetch: 10, configured: 10 })).toMatchObject({
      state: { pace: undefined },
      effects: [{ type: 'resubscribe' }],
    });
    expect(transition(slow, { type: 'release', prefetch: 2, configured: 10 }).effects).toEqual([]);
    expect(transition(inPhase('idle', { held: true }), { type: 'release', prefetch: 3, configured: 10 }).state).toMatchObject({
      held: false,
      pace: 3,
    });
  });

  it('resumes at once only once a second: a quicker loss waits with backoff', () => {
    const first = transition(inPhase('down'), verdict('at-once'));
    expect(first.effects).toEqual([{ type: 'resume-now', why: 'lost', level: 'warn' }]);
    const again = transition({ ...first.state }, { ...verdict('at-once'), now: 10_000 + QUICK_RESUME_SPACING_MS - 1 } as ConsumerStateEvent);
    expect(again.effects).toEqual([{ type: 'schedule-resume', attempt: 1, why: 'lost' }]);
    const later = transition(first.state, { ...verdict('at-once'), now: 10_000 + QUICK_RESUME_SPACING_MS } as ConsumerStateEvent);
    expect(later.effects.map((e) => e.type)).toEqual(['resume-now']);
  });

  it('counts the attempts of a backoff, schedules one at a time, and starts again from 1 once subscribed', () => {
    let state = transition(inPhase('down'), verdict('backoff')).state;
    expect(state).toMatchObject({ resumeAttempt: 1, resumeScheduled: true });
    expect(transition(state, { type: 'resume-failed', why: 'again' }).effects).toEqual([]);
    state = transition(state, { type: 'resume-due' }).state;
    expect(transition(state, { type: 'resume-failed', why: 'again' }).effects).toEqual([{ type: 'schedule-resume', attempt: 2, why: 'again' }]);
    state = transition(transition(state, { type: 'start' }).state, { type: 'opened' }).state;
    expect(transition(state, { type: 'subscribed' }).state.resumeAttempt).toBe(0);
  });

  it('cancels a scheduled resumption when the stop sequence begins', () => {
    expect(transition(inPhase('down', { resumeScheduled: true }), { type: 'stop', timeoutMs: 5 })).toMatchObject({
      state: { phase: 'stopping', resumeScheduled: false },
      effects: [{ type: 'cancel-resume' }, { type: 'wind-down' }],
    });
  });

  it('runs one stop sequence: stop cancels first, hand-over keeps the subscription and recalls the waiting deliveries at once', () => {
    expect(transition(inPhase('consuming'), { type: 'stop', timeoutMs: 500 }).effects).toEqual([
      { type: 'wind-down', timeoutMs: 500, cancelFirst: true, downReason: 'the application is stopping', lateSuffix: '' },
    ]);
    expect(transition(inPhase('consuming'), { type: 'hand-over', timeoutMs: 700 }).effects).toEqual([
      {
        type: 'wind-down',
        timeoutMs: 700,
        cancelFirst: false,
        recall: 'the queue is handed over to another consumer',
        downReason: 'handed over to another consumer',
        lateSuffix: ' of handing over',
      },
    ]);
  });

  it('on a single-active-consumer queue, a hold hands the queue over and then holds on a fresh channel; a release consumes on it', () => {
    const sac = inPhase('consuming', { handOverMs: 800 });
    const hold = transition(sac, { type: 'hold', reason: 'the queue is paused' });
    expect(hold.state).toMatchObject({ phase: 'yielding', held: true });
    expect(hold.effects).toEqual([
      {
        type: 'wind-down',
        timeoutMs: 800,
        cancelFirst: false,
        recall: 'the queue is paused',
        downReason: 'the queue is paused',
        lateSuffix: ' of holding',
      },
    ]);
    const drained = transition(hold.state, { type: 'drained' });
    expect(drained).toMatchObject({ state: { phase: 'down', held: true }, effects: [{ type: 'redeclare-and-start' }] });
    let state = transition(transition(drained.state, { type: 'start' }).state, { type: 'opened' }).state;
    expect(state.phase).toBe('held');
    expect(outcome(state, { type: 'release', prefetch: 10, configured: 10 })).toBe('consuming: resubscribe');
    // Released before the handlers were done: the fresh channel consumes at once.
    state = transition(hold.state, { type: 'release', prefetch: 10, configured: 10 }).state;
    state = transition(transition(transition(state, { type: 'drained' }).state, { type: 'start' }).state, { type: 'opened' }).state;
    expect(state).toMatchObject({ phase: 'consuming', held: false });
  });

  it('a stop while a single-active-consumer queue is handed over for a hold lets that wind-down end the consumer', () => {
    const yielding = transition(inPhase('consuming', { handOverMs: 800 }), { type: 'hold', reason: 'the queue is open' }).state;
    const stop = transition(yielding, { type: 'stop', timeoutMs: 500 });
    expect(stop).toMatchObject({ state: { phase: 'handing-over' }, effects: [] });
    expect(outcome(stop.state, { type: 'drained' })).toBe('stopped:');
    expect(transition(inPhase('consuming', { handOverMs: 800 }), { type: 'stop', timeoutMs: 500 }).effects).toEqual([
      {
        type: 'wind-down',
        timeoutMs: 500,
        cancelFirst: false,
        recall: 'the application is stopping',
        downReason: 'the application is stopping',
        lateSuffix: '',
      },
    ]);
  });
});
