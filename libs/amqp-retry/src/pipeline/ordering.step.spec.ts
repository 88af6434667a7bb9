import type { ConsumeMessage } from 'amqplib';
import { resolveHandlerConfig } from '../core/config/handler.config.js';
import { resolveModuleConfig } from '../core/config/module.config.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import type { OrderingConfig } from '../core/ordering/ordering.config.js';
import { MalformedMessageError } from '../errors/malformed-message.error.js';
import { orderingStep } from './ordering.step.js';
import { withHandlerTimeout } from './time-limit.step.js';
import { HandlerTimeoutError } from '../errors/handler-timeout.error.js';
import { DeliveryGate, type GatePass, linkPass } from '../core/delivery/delivery.gate.js';

const logger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
const config = resolveHandlerConfig({ queue: 'orders', prefetch: 10, ordering: { key: { header: 'x-key' } } }, resolveModuleConfig({}, {}), 'A.b');
const ordered = config as typeof config & { ordering: OrderingConfig };
/** The same queue with whileRetrying 'hold', and a tier of a minute: a hold lasts the whole test. */
const holding = resolveHandlerConfig(
  { queue: 'orders', prefetch: 10, delays: ['1m'], ordering: { key: { header: 'x-key' }, whileRetrying: 'hold' } },
  resolveModuleConfig({}, {}),
  'A.b',
) as typeof config & { ordering: OrderingConfig };
const contextOf = (n: number, key?: unknown): RetryContext => ({
  attempt: 1,
  maxAttempts: 3,
  isLastAttempt: false,
  queue: 'orders',
  message: {
    content: Buffer.from('{}'),
    properties: { messageId: `m-${n}`, headers: key === undefined ? {} : { 'x-key': key } },
    fields: { deliveryTag: n },
  } as unknown as ConsumeMessage,
  deaths: [],
  signal: new AbortController().signal,
});

describe('the ordering step', () => {
  it('runs the messages of one key one at a time, in arrival order, and other keys beside them', async () => {
    const log: string[] = [];
    const gates = new Map<number, () => void>();
    const invoke = orderingStep(
      ordered,
      logger,
      () => config,
    )(async (payload) => {
      const n = payload as number;
      log.push(`start ${n}`);
      await new Promise<void>((resolve) => gates.set(n, resolve));
      log.push(`end ${n}`);
    });
    const runs = [invoke(1, contextOf(1, 'a')), invoke(2, contextOf(2, 'a')), invoke(3, contextOf(3, 'b'))];
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['start 1', 'start 3']); // 2 waits for 1, its key's turn; 3 has a key of its own
    gates.get(1)?.();
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['start 1', 'start 3', 'end 1', 'start 2']);
    gates.get(2)?.();
    gates.get(3)?.();
    await Promise.all(runs);
  });

  it('runs a message without a key at once, and parks one whose key cannot be read as malformed', async () => {
    const calls: number[] = [];
    const throwing = resolveHandlerConfig(
      {
        queue: 'orders',
        ordering: {
          key: (payload: unknown) => {
            if (payload === 2) throw new Error('no customer');
            return undefined;
          },
        },
      },
      resolveModuleConfig({}, {}),
      'A.b',
    ) as typeof ordered;
    const invoke = orderingStep(throwing, logger, () => config)(async (payload) => void calls.push(payload as number));
    await invoke(1, contextOf(1));
    await expect(invoke(2, contextOf(2))).rejects.toBeInstanceOf(MalformedMessageError);
    expect(calls).toEqual([1]);
  });

  it('lets the next message of the key run when one fails', async () => {
    const calls: number[] = [];
    const invoke = orderingStep(
      ordered,
      logger,
      () => config,
    )(async (payload) => {
      calls.push(payload as number);
      if (payload === 1) throw new Error('declined');
    });
    const [first, second] = [invoke(1, contextOf(1, 'a')), invoke(2, contextOf(2, 'a'))];
    await expect(first).rejects.toThrow('declined');
    await second;
    expect(calls).toEqual([1, 2]);
  });

  it("lets the key's next message run after a timed-out call has ended, not beside it, and bounds that wait by one more timeout", async () => {
    const events: string[] = [];
    const slow = async (payload: unknown) => {
      const n = payload as number;
      events.push(`start ${n}`);
      await new Promise((resolve) => setTimeout(resolve, n === 1 ? 80 : n === 3 ? 10_000 : 5));
      events.push(`end ${n}`);
    };
    const invoke = orderingStep(ordered, logger, () => config)(withHandlerTimeout(slow, 50, 'orders'));
    const [first, second] = [invoke(1, contextOf(1, 'a')), invoke(2, contextOf(2, 'a'))];
    await expect(first).rejects.toBeInstanceOf(HandlerTimeoutError);
    await second;
    expect(events).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
    // A call that never ends holds its key for one more timeout only.
    const started = Date.now();
    const [third, fourth] = [invoke(3, contextOf(3, 'b')), invoke(4, contextOf(4, 'b'))];
    await expect(third).rejects.toBeInstanceOf(HandlerTimeoutError);
    await fourth;
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("'hold': a timed-out call holds its key for the retry at once, so the retried copy is not queued behind the next message", async () => {
    const calls: string[] = [];
    const slowFirst = async (payload: unknown, ctx: RetryContext) => {
      calls.push(`${payload as number}.${ctx.attempt}`);
      if (ctx.attempt === 1 && payload === 1) await new Promise((resolve) => setTimeout(resolve, 200));
    };
    const invoke = orderingStep(holding, logger, () => holding)(withHandlerTimeout(slowFirst, 50, 'orders'));
    await expect(invoke(1, contextOf(1, 'a'))).rejects.toBeInstanceOf(HandlerTimeoutError);
    const next = invoke(2, contextOf(2, 'a')); // the key's next message, while the abandoned call runs on
    const retried = invoke(1, { ...contextOf(1, 'a'), attempt: 2 }); // its retry, back before the call has ended
    await Promise.all([next, retried]);
    expect(calls).toEqual(['1.1', '1.2', '2.1']);
  });

  it("'hold': after a timeout the retry, and a message let in by a hold that ended early, wait for the abandoned call; one more timeout at most", async () => {
    const running = new Map<string, number>();
    const events: string[] = [];
    let overlaps = 0;
    /** Attempt 1 of message 1 of each key ignores its signal: it runs `abandonedMs` (its timeout is 100 ms). */
    const handler = (abandonedMs: number) => async (payload: unknown, ctx: RetryContext) => {
      const [key, n] = payload as [string, number];
      const now = (running.get(key) ?? 0) + 1;
      running.set(key, now);
      if (now > 1) overlaps++;
      events.push(`start ${key}${n}.${ctx.attempt}`);
      await new Promise((resolve) => setTimeout(resolve, n === 1 && ctx.attempt === 1 ? abandonedMs : 5));
      events.push(`end ${key}${n}.${ctx.attempt}`);
      running.set(key, running.get(key)! - 1);
    };
    const contextOfKey = (key: string, n: number, attempt = 1) => ({ ...contextOf(n, key), attempt });
    // The retried copy comes back while its first attempt still runs; the key's later messages wait behind the hold.
    const invoke = orderingStep(holding, logger, () => holding)(withHandlerTimeout(handler(150), 100, 'orders'));
    await expect(invoke(['a', 1], contextOfKey('a', 1))).rejects.toBeInstanceOf(HandlerTimeoutError);
    const later = [invoke(['a', 2], contextOfKey('a', 2)), invoke(['a', 3], contextOfKey('a', 3))];
    await invoke(['a', 1], contextOfKey('a', 1, 2));
    await Promise.all(later);
    expect(events).toEqual(['start a1.1', 'end a1.1', 'start a1.2', 'end a1.2', 'start a2.1', 'end a2.1', 'start a3.1', 'end a3.1']);
    // A prefetch of 2 spares one message behind holds: a second one ends the hold ('full') while the call runs on.
    events.length = 0;
    const small = { ...holding, prefetch: 2 };
    const full = orderingStep(small, logger, () => small)(withHandlerTimeout(handler(150), 100, 'orders'));
    await expect(full(['b', 1], contextOfKey('b', 1))).rejects.toBeInstanceOf(HandlerTimeoutError);
    await Promise.all([full(['b', 2], contextOfKey('b', 2)), full(['b', 3], contextOfKey('b', 3))]);
    expect(events).toEqual(['start b1.1', 'end b1.1', 'start b2.1', 'end b2.1', 'start b3.1', 'end b3.1']);
    // A call that never ends holds back its retry for one more timeout only.
    events.length = 0;
    const endless = orderingStep(holding, logger, () => holding)(withHandlerTimeout(handler(10_000), 100, 'orders'));
    await expect(endless(['c', 1], contextOfKey('c', 1))).rejects.toBeInstanceOf(HandlerTimeoutError);
    const timedOutAt = Date.now();
    await endless(['c', 1], contextOfKey('c', 1, 2));
    expect(Date.now() - timedOutAt).toBeGreaterThanOrEqual(95);
    expect(Date.now() - timedOutAt).toBeLessThan(2_000);
    expect(events).toEqual(['start c1.1', 'start c1.2', 'end c1.2']);
    expect(overlaps).toBe(1); // c's retry, past the bound, beside the call that never ends
  });

  it("stops waiting for an abandoned call when the waiting delivery's channel dies, and gives the key back", async () => {
    const calls: string[] = [];
    const invoke = orderingStep(
      holding,
      logger,
      () => holding,
    )(
      withHandlerTimeout(
        async (payload, ctx) => {
          calls.push(`${payload as number}.${ctx.attempt}`);
          if (ctx.attempt === 1 && payload === 1) await new Promise((resolve) => setTimeout(resolve, 10_000));
        },
        100,
        'orders',
      ),
    );
    const first = invoke(1, contextOf(1, 'a'));
    await expect(first).rejects.toBeInstanceOf(HandlerTimeoutError);
    const channel = new AbortController();
    const retry = invoke(1, { ...contextOf(1, 'a'), attempt: 2, signal: channel.signal });
    await new Promise((resolve) => setImmediate(resolve));
    channel.abort(new Error('channel closed'));
    await expect(retry).rejects.toThrow('the delivery was lost while it waited for its ordering key');
    await invoke(2, contextOf(2, 'a')); // the key is not held for the lost retry
    expect(calls).toEqual(['1.1', '2.1']);
  });

  it("'hold': a failure holds the key for the retry, unless the delivery's signal aborted (it goes back at this attempt)", async () => {
    const calls: number[] = [];
    const invoke = orderingStep(
      holding,
      logger,
      () => holding,
    )(async (payload) => {
      calls.push(payload as number);
      if (payload === 1 || payload === 3) throw new Error('down');
    });
    // Taken back (its signal aborted) while it ran: no hold, the next message of the key runs at once.
    const takenBack = new AbortController();
    takenBack.abort(new Error('recalled'));
    await expect(invoke(1, { ...contextOf(1, 'a'), signal: takenBack.signal })).rejects.toThrow('down');
    await invoke(2, contextOf(2, 'a'));
    expect(calls).toEqual([1, 2]);
    // A failure on its way to a tier holds the key: the next message waits for the retried copy.
    await expect(invoke(3, contextOf(3, 'a'))).rejects.toThrow('down');
    const channel = new AbortController();
    let fourth = false;
    const waiting = invoke(4, { ...contextOf(4, 'a'), signal: channel.signal }).then(() => (fourth = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect({ calls, fourth }).toEqual({ calls: [1, 2, 3], fourth: false });
    channel.abort(); // its channel lost while it waits: it stops waiting, unsettled
    await expect(waiting).rejects.toThrow('lost while it waited');
  });

  /** Runs deliveries through a gate as the consumer does: each in its place, its pass linked to its message and left at its end. */
  function throughGate(gate: DeliveryGate, invoke: (payload: unknown, context: RetryContext) => Promise<unknown>) {
    return (n: number, context: RetryContext, exclusive = false) => {
      const run = (pass: GatePass) => {
        linkPass(context.message, pass);
        return invoke(n, context).finally(() => pass.leave());
      };
      const pass = gate.tryEnter(exclusive);
      return pass ? { pass, done: run(pass) } : { pass: undefined, done: gate.enter(exclusive).then(run) };
    };
  }

  const tick = () => new Promise((resolve) => setImmediate(resolve));

  it("'hold': a message waiting for its key steps aside from the gate: a suspect runs meanwhile; the retry, then the message, after it", async () => {
    const gate = new DeliveryGate(5);
    const log: string[] = [];
    const ends = new Map<string, () => void>();
    const invoke = orderingStep(
      holding,
      logger,
      () => holding,
    )(async (payload, context) => {
      const name = `${payload as number}.${context.attempt}`;
      log.push(name);
      if (name === '1.1') throw new Error('down');
      await new Promise<void>((resolve) => ends.set(name, resolve));
    });
    const run = throughGate(gate, invoke);
    await expect(run(1, contextOf(1, 'a')).done).rejects.toThrow('down'); // the key holds for its retry
    const second = run(2, contextOf(2, 'a')).done;
    await tick();
    const suspect = run(3, contextOf(3, 's'), true).done;
    await tick();
    expect(log).toEqual(['1.1', '3.1']); // not kept waiting by 2, which runs nothing
    const retry = run(1, { ...contextOf(1, 'a'), attempt: 2 }).done;
    await tick();
    expect(log).toEqual(['1.1', '3.1']); // never beside the suspect
    ends.get('3.1')?.();
    await tick();
    expect(log).toEqual(['1.1', '3.1', '1.2']);
    ends.get('1.2')?.();
    await tick();
    expect(log).toEqual(['1.1', '3.1', '1.2', '2.1']);
    ends.get('2.1')?.();
    await Promise.all([second, suspect, retry]);
    expect(gate.size).toBe(0);
  });

  it('gives a turn that came while its channel died back to the key, without calling the handler', async () => {
    const gate = new DeliveryGate(5);
    const calls: number[] = [];
    const ends = new Map<number, () => void>();
    const invoke = orderingStep(
      ordered,
      logger,
      () => config,
    )(async (payload) => {
      calls.push(payload as number);
      if (payload !== 2) await new Promise<void>((resolve) => ends.set(payload as number, resolve));
    });
    const run = throughGate(gate, invoke);
    const [channelA, channelB] = [new AbortController(), new AbortController()];
    const first = run(1, { ...contextOf(1, 'a'), signal: channelA.signal });
    const second = run(2, { ...contextOf(2, 'a'), signal: channelB.signal });
    await tick();
    channelA.abort(new Error('channel A closed'));
    first.pass!.detach(); // 1 runs on, detached; 2 waits aside: a suspect runs
    const suspect = run(3, contextOf(3, 's'), true);
    await tick();
    expect(calls).toEqual([1, 3]);
    ends.get(1)?.();
    await first.done;
    await tick(); // 2 has its key's turn, and waits for the suspect
    channelB.abort(new Error('channel B closed'));
    second.pass!.detach();
    await expect(second.done).rejects.toThrow('the delivery was lost while it waited for its ordering key');
    const third = run(4, contextOf(4, 'a')).done;
    ends.get(3)?.();
    await suspect.done;
    await tick();
    expect(calls).toEqual([1, 3, 4]); // 2 was not called; the key went on
    ends.get(4)?.();
    await third;
  });
});
