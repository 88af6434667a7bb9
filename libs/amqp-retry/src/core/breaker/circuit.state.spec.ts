import { readCircuitBreaker } from './breaker.config.js';
import { CircuitBreakerState, type CircuitTicket } from './circuit.state.js';

const at = (key: string) => `option "${key}"`;
const config = (options: object = {}) => readCircuitBreaker({ window: '10s', openFor: '1s', maxOpenFor: '5s', ...options }, at)!;

/** Admits one delivery and records its outcome at `now`. */
function call(breaker: CircuitBreakerState, failed: boolean, now: number) {
  const ticket = breaker.admit();
  if (!ticket) throw new Error('not admitted');
  return breaker.record(ticket, failed, now);
}

describe('CircuitBreakerState', () => {
  it('opens once the failure rate over the window reaches failureRate with minimumCalls counted', () => {
    const breaker = new CircuitBreakerState(config({ failureRate: 0.5, minimumCalls: 10, consecutiveFailures: 100 }));
    for (let i = 0; i < 5; i++) expect(call(breaker, false, 1_000 + i)).toBeUndefined();
    for (let i = 0; i < 4; i++) expect(call(breaker, true, 2_000 + i)).toBeUndefined();
    // 4 of 9: below the minimum of calls; the 10th call, a failure, makes 5 of 10.
    expect(call(breaker, true, 3_000)).toEqual({
      from: 'closed',
      to: 'open',
      reason: '5 of 10 calls in the last 10s failed (50%); open for 1s',
      openForMs: 1_000,
    });
    expect(breaker.state).toBe('open');
    expect(breaker.admit()).toBeUndefined();
  });

  it('forgets calls that left the window', () => {
    const breaker = new CircuitBreakerState(config({ failureRate: 0.5, minimumCalls: 4, consecutiveFailures: 100 }));
    call(breaker, false, 0);
    call(breaker, false, 1);
    call(breaker, true, 20_000);
    call(breaker, true, 20_001);
    // Without forgetting, 2 of 4 failed; the two successes are 20 s old, out of the 10 s window.
    expect(breaker.counts(20_001)).toEqual({ failures: 2, calls: 2 });
    expect(breaker.state).toBe('closed');
    expect(call(breaker, true, 20_002)).toBeUndefined(); // 3 calls: under minimumCalls
    expect(call(breaker, true, 20_003)?.to).toBe('open');
  });

  it('opens after consecutiveFailures in a row, however many successes the window holds', () => {
    const breaker = new CircuitBreakerState(config({ minimumCalls: 20, consecutiveFailures: 3 }));
    for (let i = 0; i < 100; i++) call(breaker, false, i);
    call(breaker, true, 200);
    call(breaker, true, 201);
    call(breaker, false, 202); // a success breaks the run
    call(breaker, true, 203);
    call(breaker, true, 204);
    expect(call(breaker, true, 205)).toMatchObject({ to: 'open', reason: '3 calls in a row failed; open for 1s' });
  });

  it('half-opens on the timer, admits exactly halfOpenCalls, and closes when all of them succeed', () => {
    const breaker = new CircuitBreakerState(config({ consecutiveFailures: 1, halfOpenCalls: 2 }));
    call(breaker, true, 0);
    expect(breaker.halfOpen()).toEqual({ from: 'open', to: 'half-open', reason: 'letting 2 trial calls through' });
    const first = breaker.admit() as CircuitTicket;
    const second = breaker.admit() as CircuitTicket;
    expect(first.trial && second.trial).toBe(true);
    expect(breaker.admit()).toBeUndefined();
    expect(breaker.record(first, false, 10)).toBeUndefined();
    expect(breaker.record(second, false, 11)).toEqual({ from: 'half-open', to: 'closed', reason: '2 trial calls succeeded' });
    expect(breaker.state).toBe('closed');
  });

  it('reopens on a failed trial with the open time doubled up to maxOpenFor, and starts again from openFor once closed', () => {
    const breaker = new CircuitBreakerState(config({ consecutiveFailures: 1 }));
    const openTimes: Array<number | undefined> = [call(breaker, true, 0)?.openForMs];
    for (let i = 0; i < 4; i++) {
      breaker.halfOpen();
      openTimes.push(call(breaker, true, i)?.openForMs);
    }
    expect(openTimes).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
    breaker.halfOpen();
    expect(call(breaker, false, 10)?.to).toBe('closed');
    expect(call(breaker, true, 11)?.openForMs).toBe(1_000);
  });

  it('frees a trial place for a delivery that ended without a counted outcome', () => {
    const breaker = new CircuitBreakerState(config({ consecutiveFailures: 1 }));
    call(breaker, true, 0);
    breaker.halfOpen();
    const parked = breaker.admit() as CircuitTicket;
    expect(breaker.admit()).toBeUndefined();
    breaker.release(parked);
    breaker.release(parked); // twice changes nothing
    expect(breaker.admit()).toBeDefined();
    expect(breaker.admit()).toBeUndefined();
  });

  it('ignores outcomes of calls admitted before the last change of state', () => {
    const breaker = new CircuitBreakerState(config({ consecutiveFailures: 1 }));
    const straggler = breaker.admit() as CircuitTicket;
    call(breaker, true, 0); // opens
    breaker.halfOpen();
    // The straggler started while closed; its success must not close the breaker, nor its failure reopen it.
    expect(breaker.record(straggler, false, 1)).toBeUndefined();
    expect(breaker.state).toBe('half-open');
    expect(call(breaker, true, 2)?.to).toBe('open');
  });

  it('counts only the last window (to a tenth of it) at any rate', () => {
    const breaker = new CircuitBreakerState(config({ failureRate: 1, minimumCalls: 1_000_000, consecutiveFailures: 1_000_000 }));
    for (let t = 0; t < 100_000; t += 7) call(breaker, t % 2 === 0, t);
    const { calls } = breaker.counts(100_000);
    expect(calls).toBeGreaterThanOrEqual(Math.floor(9_000 / 7)); // the window slides in tenths
    expect(calls).toBeLessThanOrEqual(Math.ceil(10_000 / 7) + 1);
  });

  it("does not count a retried message's failure while closed: a backlog of bad messages never opens it; a success counts on any attempt", () => {
    const breaker = new CircuitBreakerState(config({ failureRate: 0.5, minimumCalls: 10, consecutiveFailures: 5 }));
    // 40% of the messages always fail, four attempts each: 73% of the calls fail, but only 40% of the first attempts.
    for (let i = 0; i < 200; i++) {
      const bad = i % 5 === 1 || i % 5 === 3;
      for (let attempt = 1; attempt <= (bad ? 4 : 1); attempt++) {
        const ticket = breaker.admit() as CircuitTicket;
        expect(breaker.record(ticket, bad, i * 20, attempt)).toBeUndefined();
      }
    }
    // Then a backlog of retried bad messages only: still closed.
    for (let i = 0; i < 100; i++) expect(breaker.record(breaker.admit() as CircuitTicket, true, 4_000 + i, 3)).toBeUndefined();
    expect(breaker.state).toBe('closed');
    expect(breaker.counts(4_100)).toEqual({ failures: 80, calls: 200 });
    // A dependency that is down fails the first attempts too.
    for (let i = 0; i < 4; i++) expect(breaker.record(breaker.admit() as CircuitTicket, true, 5_000 + i, 1)).toBeUndefined();
    expect(breaker.record(breaker.admit() as CircuitTicket, true, 5_005, 1)).toMatchObject({
      to: 'open',
      reason: '5 calls in a row failed; open for 1s',
    });
  });

  it("half-open: a retried message's failed trial frees its place for another; a first attempt's failure reopens at once", () => {
    const breaker = new CircuitBreakerState(config({ consecutiveFailures: 1, halfOpenCalls: 1 }));
    call(breaker, true, 0);
    breaker.halfOpen();
    const again = breaker.admit() as CircuitTicket;
    expect(breaker.admit()).toBeUndefined();
    expect(breaker.record(again, true, 10, 2)).toMatchObject({
      to: 'open',
      reason: '1 trial calls of retried messages failed in a row; open for 2s',
    });
    breaker.halfOpen();
    expect(breaker.record(breaker.admit() as CircuitTicket, true, 20, 1)).toMatchObject({ to: 'open', reason: 'a trial call failed; open for 4s' });
  });

  it('half-open: reopens after consecutiveFailures trials of retried messages failed in a row; a success closes it', () => {
    const breaker = new CircuitBreakerState(config({ consecutiveFailures: 3 }));
    for (let i = 0; i < 3; i++) call(breaker, true, i);
    breaker.halfOpen();
    for (let i = 0; i < 2; i++) expect(breaker.record(breaker.admit() as CircuitTicket, true, 10 + i, 4)).toBeUndefined();
    expect(breaker.state).toBe('half-open');
    expect(breaker.record(breaker.admit() as CircuitTicket, true, 20, 2)).toMatchObject({
      to: 'open',
      reason: '3 trial calls of retried messages failed in a row; open for 2s',
    });
    breaker.halfOpen(); // the run starts again at each half-open
    for (let i = 0; i < 2; i++) expect(breaker.record(breaker.admit() as CircuitTicket, true, 30 + i, 2)).toBeUndefined();
    expect(breaker.record(breaker.admit() as CircuitTicket, false, 40, 3)).toMatchObject({ to: 'closed' });
  });
});
