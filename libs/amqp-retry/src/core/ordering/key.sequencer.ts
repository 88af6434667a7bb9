import { startTimer } from '../time/duration.timer.js';

/** A message's turn on its key: it runs until `leave()`. */
export interface KeyTurn {
  /** The message is done; `hold`: it waits in a retry tier, and the key waits for `owner`'s copy, at most `ms`. */
  leave(hold?: { owner: string; ms: number }): void;
}

/** Schedules `run` after `ms`; returns a cancel function. Injected so that tests control time. */
export type Schedule = (run: () => void, ms: number) => () => void;

/** Why a hold ended before its retry came back, for the log. */
export type HoldBreak = { key: string; owner: string; waiting: number; why: 'expired' | 'full' };

/** Admits a waiting message: its turn, or undefined when its signal aborted. */
type Waiter = (turn: KeyTurn | undefined) => void;

interface KeyState {
  running: boolean;
  waiters: Waiter[];
  hold?: { owner: string; cancel: () => void };
}

const defaultSchedule: Schedule = (run, ms) => {
  const timer = startTimer(ms, run).unref(); // holdGrace may be up to a year
  return () => timer.cancel();
};

/**
 * Runs messages with the same key one at a time, in the order they called `enter()`; different keys run side by side.
 *
 * A hold (`whileRetrying: 'hold'`) keeps a key's later messages waiting until the retried copy comes back, runs first
 * and leaves without a hold. It ends early (`onBreak`) after `ms`, or when more than `maxHeldWaiting` messages wait
 * behind holds: each takes a prefetch slot, and the retried copy needs a free one to come back at all. A function is
 * read each time a message joins the waiting: the bound follows a prefetch that changes (a half-open circuit's).
 */
export class KeySequencer {
  private readonly keys = new Map<string, KeyState>();

  constructor(
    private readonly maxHeldWaiting: number | (() => number),
    private readonly onBreak: (event: HoldBreak) => void = () => undefined,
    private readonly schedule: Schedule = defaultSchedule,
  ) {}

  /** Keys with running, waiting or held messages (for tests and leak checks). */
  get size(): number {
    return this.keys.size;
  }

  /** `owner`'s turn on `key` if it is free now (nothing runs, waits or holds before it), else undefined: then `enter()`. */
  tryEnter(key: string, owner: string): KeyTurn | undefined {
    let state = this.keys.get(key);
    if (state === undefined) this.keys.set(key, (state = { running: true, waiters: [] }));
    else if (state.running || (state.hold ? state.hold.owner !== owner : state.waiters.length > 0)) return undefined;
    state.hold?.cancel();
    state.hold = undefined;
    state.running = true;
    return this.turn(key, state);
  }

  /** Resolves with `owner`'s turn on `key` (undefined if `signal` aborted); the place in line is taken synchronously. */
  enter(key: string, owner: string, signal?: AbortSignal): Promise<KeyTurn | undefined> {
    const now = this.tryEnter(key, owner);
    if (now !== undefined) return Promise.resolve(now);
    const state = this.keys.get(key)!;
    if (signal?.aborted) {
      this.forgetIfIdle(key, state);
      return Promise.resolve(undefined);
    }
    const held = state.hold !== undefined;
    const entered = new Promise<KeyTurn | undefined>((resolve) => {
      const waiter: Waiter = (turn) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(turn);
      };
      // A state with waiters is never forgotten: while this one waits in it, it is the key's.
      const onAbort = () => {
        const at = state.waiters.indexOf(waiter);
        if (at < 0) return;
        state.waiters.splice(at, 1);
        this.forgetIfIdle(key, state);
        waiter(undefined);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      state.waiters.push(waiter);
    });
    if (held) this.enforceLimit();
    return entered;
  }

  private turn(key: string, state: KeyState): KeyTurn {
    let done = false;
    return {
      leave: (hold) => {
        if (done) return;
        done = true;
        state.running = false;
        if (hold === undefined) return this.next(key, state);
        state.hold = { owner: hold.owner, cancel: this.schedule(() => this.release(key, state, 'expired'), hold.ms) };
        this.enforceLimit();
      },
    };
  }

  private next(key: string, state: KeyState): void {
    const waiter = state.waiters.shift();
    if (waiter === undefined) return this.forgetIfIdle(key, state);
    state.running = true;
    waiter(this.turn(key, state));
  }

  private release(key: string, state: KeyState, why: HoldBreak['why']): void {
    const hold = state.hold;
    if (hold === undefined || this.keys.get(key) !== state) return;
    hold.cancel();
    state.hold = undefined;
    this.onBreak({ key, owner: hold.owner, waiting: state.waiters.length, why });
    if (!state.running) this.next(key, state);
  }

  /** Breaks the oldest holds while more messages wait behind holds than the consumer can spare. */
  private enforceLimit(): void {
    const max = typeof this.maxHeldWaiting === 'number' ? this.maxHeldWaiting : this.maxHeldWaiting();
    for (;;) {
      let waiting = 0;
      let oldest: [string, KeyState] | undefined;
      for (const entry of this.keys) {
        if (entry[1].hold === undefined) continue;
        waiting += entry[1].waiters.length;
        oldest ??= entry;
      }
      if (oldest === undefined || waiting <= max) return;
      this.release(oldest[0], oldest[1], 'full');
    }
  }

  private forgetIfIdle(key: string, state: KeyState): void {
    if (!state.running && state.hold === undefined && state.waiters.length === 0 && this.keys.get(key) === state) this.keys.delete(key);
  }
}
