import { jest } from '@jest/globals';
import { from, Observable, Subject, throwError } from 'rxjs';
import type { RetryEngine } from '../engine/retry.engine.js';
import type { ReplyAddressState } from '../core/publish/reply-address.rules.js';
import type { RequestOutcome } from '../pipeline/delivery.contracts.js';
import { RequestReplies } from './request.replies.js';

const request = { kind: 'request' as const, pattern: 'p', data: {}, id: 'r-1', replyTo: 'amq.rabbitmq.reply-to.x', correlationId: 'c-1' };
const setTimeoutOf = setTimeout;
const clearTimeoutOf = clearTimeout;
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

/** A fake engine: `caller` is what it says of the reply address; `publishError` fails every publish. */
function replies(timeoutMs = 5_000, { caller = { kind: 'exists' }, publishError }: { caller?: ReplyAddressState; publishError?: Error } = {}) {
  const sent: Array<Record<string, unknown>> = [];
  const mandatory: unknown[] = [];
  const warnings: string[] = [];
  let probes = 0;
  const engine = {
    publish: (_exchange: string, _key: string, content: Buffer, options: { mandatory?: boolean }) => {
      if (publishError) return Promise.reject(publishError);
      sent.push(JSON.parse(content.toString()) as Record<string, unknown>);
      mandatory.push(options.mandatory);
      return Promise.resolve();
    },
    replyAddressState: () => {
      probes++;
      return Promise.resolve(caller);
    },
  } as unknown as RetryEngine;
  const logger = { ...silent, warn: (line: string) => void warnings.push(line) };
  return { sent, mandatory, warnings, probes: () => probes, answers: new RequestReplies(engine, logger, timeoutMs) };
}

describe('the replies to a request', () => {
  it('answers a handler that never ends with a timeout error after requestTimeout, and stops listening to it', async () => {
    const { sent, answers } = replies(50);
    let unsubscribed = false;
    const started = Date.now();
    await answers.answer(request, async () => new Observable<unknown>((subscriber) => (subscriber.next(1), () => (unsubscribed = true))));
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(sent).toEqual([
      { response: 1, id: 'r-1' },
      { err: { status: 'error', message: 'no answer to "p" within 50 ms (RetryServer option requestTimeout)' }, isDisposed: true, id: 'r-1' },
    ]);
    expect(unsubscribed).toBe(true);
  });

  it("stops waiting, without an answer and with its timer gone, when the delivery's signal aborts (a server closing)", async () => {
    const { sent, answers } = replies(60_000);
    const abort = new AbortController();
    let unsubscribed = false;
    // The request's own timers, watched through the globals it arms them with: a count of the process's timers
    // would also see Jest's and the runtime's own, which come and go on a loaded machine.
    const armed = new Set<unknown>();
    let armedInAll = 0;
    const arm = jest.spyOn(globalThis, 'setTimeout').mockImplementation(((...args: Parameters<typeof setTimeout>) => {
      const handle = setTimeoutOf(...args);
      armed.add(handle);
      armedInAll++;
      return handle;
    }) as typeof setTimeout);
    const disarm = jest.spyOn(globalThis, 'clearTimeout').mockImplementation((handle) => {
      armed.delete(handle);
      clearTimeoutOf(handle);
    });
    try {
      const answering = answers.answer(request, async () => new Observable<unknown>(() => () => (unsubscribed = true)), abort.signal);
      await new Promise((resolve) => setImmediate(resolve));
      abort.abort();
      await answering;
    } finally {
      arm.mockRestore();
      disarm.mockRestore();
    }
    expect(armedInAll).toBeGreaterThan(0);
    expect({ sent, unsubscribed, timersLeft: armed.size }).toEqual({ sent: [], unsubscribed: true, timersLeft: 0 });
  });

  it('does not run the handler of a delivery whose signal aborted already', async () => {
    const { sent, answers } = replies();
    const abort = new AbortController();
    abort.abort();
    let ran = false;
    await answers.answer(request, async () => ((ran = true), from([1])), abort.signal);
    expect({ sent, ran }).toEqual({ sent: [], ran: false });
  });

  it("aborts the handler's signal at the timeout, so that a handler past it can stop; an answered request's stays as it was", async () => {
    const { answers } = replies(30);
    let timedOut: AbortSignal | undefined;
    const late = await answers.answer(request, async (signal) => ((timedOut = signal), new Observable<unknown>(() => undefined)));
    expect({ aborted: timedOut?.aborted, reason: (timedOut?.reason as Error).message }).toEqual({
      aborted: true,
      reason: 'no answer to "p" within 30 ms (RetryServer option requestTimeout)',
    });
    let answered: AbortSignal | undefined;
    const done = await answers.answer(request, async (signal) => ((answered = signal), from([1])));
    expect(answered?.aborted).toBe(false);
    // Answered without an error (the breaker's success); late, or an error answered: failed, with what failed it.
    const failed = await answers.answer(request, async () => throwError(() => new Error('declined')));
    const why = (outcome: RequestOutcome) => (outcome.answered ? 'answered' : (outcome.error as Error).message);
    expect({ late: why(late), done: why(done), failed: why(failed) }).toEqual({
      late: 'no answer to "p" within 30 ms (RetryServer option requestTimeout)',
      done: 'answered',
      failed: 'declined',
    });
  });

  it('answers a handler whose promise never settles with the timeout error too', async () => {
    const { sent, answers } = replies(30);
    await answers.answer(request, () => new Promise<never>(() => undefined));
    expect(sent).toEqual([
      { err: { status: 'error', message: 'no answer to "p" within 30 ms (RetryServer option requestTimeout)' }, isDisposed: true, id: 'r-1' },
    ]);
  });

  it('sends each value, then the end, in order', async () => {
    const { sent, answers } = replies();
    await answers.answer(request, async () => from([1, 2]));
    expect(sent).toEqual([
      { response: 1, id: 'r-1' },
      { response: 2, id: 'r-1' },
      { isDisposed: true, id: 'r-1' },
    ]);
  });

  it('ends with an error at a value JSON cannot write, and sends nothing after it', async () => {
    const { sent, answers } = replies();
    let unsubscribed = false;
    const values = new Subject<unknown>();
    const done = answers.answer(request, async () => {
      return new Observable((subscriber) => {
        const inner = values.subscribe(subscriber);
        return () => ((unsubscribed = true), inner.unsubscribe());
      });
    });
    await new Promise((resolve) => setImmediate(resolve));
    values.next(1);
    values.next({ n: 1n });
    values.next(3);
    values.complete();
    await done;
    expect(sent).toHaveLength(2);
    expect(sent[0]).toEqual({ response: 1, id: 'r-1' });
    expect(sent[1]).toMatchObject({ isDisposed: true, id: 'r-1', err: { status: 'error' } });
    expect(String((sent[1].err as { message: string }).message)).toMatch(/"p" cannot be written as JSON/);
    expect(unsubscribed).toBe(true);
  });

  it('stops a synchronous stream at a value JSON cannot write', async () => {
    const { sent, answers } = replies();
    await answers.answer(request, async () => from([{ n: 1n }, 2]));
    expect(sent).toEqual([expect.objectContaining({ isDisposed: true, err: expect.objectContaining({ status: 'error' }) })]);
  });

  it('sends an error for a failed handler or stream, and one the caller can read for an Error', async () => {
    const { sent, answers } = replies();
    await answers.answer(request, () => Promise.reject(new TypeError('bad')));
    await answers.answer(request, async () => throwError(() => ({ status: 'error', message: 'Internal server error' })));
    expect(sent).toEqual([
      { err: { status: 'error', message: 'bad', name: 'TypeError' }, isDisposed: true, id: 'r-1' },
      { err: { status: 'error', message: 'Internal server error' }, isDisposed: true, id: 'r-1' },
    ]);
  });

  it('asks once whether a direct reply-to caller is there, then sends every reply without mandatory, warning about nothing', async () => {
    const { sent, mandatory, warnings, probes, answers } = replies();
    await answers.answer(request, async () => from([1, 2]));
    expect(sent).toHaveLength(3);
    expect(mandatory).toEqual([false, false, false]);
    expect(probes()).toBe(1);
    expect(warnings).toEqual([]);
  });

  it('drops the replies to a caller that is gone, with one warning for the request', async () => {
    const { sent, warnings, answers } = replies(5_000, { caller: { kind: 'gone' } });
    await answers.answer(request, async () => from([1, 2]));
    expect(sent).toEqual([]);
    expect(warnings).toEqual([
      'Could not reply to "p" at "amq.rabbitmq.reply-to.x": the caller is gone (its reply address no longer exists), so its reply is dropped; the request is acked, not retried',
    ]);
  });

  it("cuts a request's pattern in its log lines to 255 bytes, as a park's line cuts what the sender chose", async () => {
    const hostile = { ...request, pattern: 'p'.repeat(2_000_000) };
    const gone = replies(5_000, { caller: { kind: 'gone' } });
    await gone.answers.answer(hostile, async () => from([1]));
    const late = replies(20);
    await late.answers.answer(hostile, async () => new Observable<never>());
    const lines = [...gone.warnings, ...late.warnings];
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line.length).toBeLessThan(600);
      expect(line).toContain(`"${'p'.repeat(240)}`);
      expect(line).toContain('... [truncated]"');
    }
  });

  it('drops the replies to an address the engine refuses (forged), with one warning naming why, and publishes nothing', async () => {
    const reason = 'it is no address RabbitMQ hands out (its pid is not an Erlang process id)';
    const { sent, warnings, probes, answers } = replies(5_000, { caller: { kind: 'refused', reason } });
    await answers.answer(request, async () => from([1, 2]));
    expect(sent).toEqual([]);
    expect(probes()).toBe(1);
    expect(warnings).toEqual([
      `Could not reply to "p" at "amq.rabbitmq.reply-to.x": ${reason}, so its reply is dropped; the request is acked, not retried`,
    ]);
  });

  it('sends to an ordinary reply queue with mandatory, and warns once when every reply fails', async () => {
    const ordinary = { ...request, replyTo: 'orders.replies' };
    const { mandatory, probes, answers } = replies();
    await answers.answer(ordinary, async () => from([1]));
    expect(mandatory).toEqual([true, true]);
    expect(probes()).toBe(0);
    const failing = replies(5_000, { publishError: new Error('no queue is bound to receive it (returned as unroutable)') });
    await failing.answers.answer(ordinary, async () => from([1, 2]));
    expect(failing.warnings).toEqual([
      'Could not reply to "p" at "orders.replies": no queue is bound to receive it (returned as unroutable) (the caller may be gone); the request is acked, not retried',
    ]);
  });
});
