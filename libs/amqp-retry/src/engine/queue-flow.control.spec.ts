import type { HandlerInvoker } from '../pipeline/delivery.contracts.js';
import { jest } from '@jest/globals';
import type { ConsumeMessage } from 'amqplib';
import { resolveHandlerConfig } from '../core/config/handler.config.js';
import { resolveModuleConfig } from '../core/config/module.config.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { QueueFlowControl } from './queue-flow.control.js';

const silent = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
const configOf = (options: object) => resolveHandlerConfig({ queue: 'orders', ...options }, resolveModuleConfig({}, {}), 'A.b');
const message = (n: number) => ({ fields: { deliveryTag: n }, content: Buffer.from('{}'), properties: { headers: {} } }) as unknown as ConsumeMessage;

/** A flow over a fake consumer that records hold/release, with a clock the test moves. */
function flowOf(options: object) {
  const target: string[] = [];
  let now = 0;
  const flow = new QueueFlowControl(configOf(options), { logger: silent, now: () => now });
  flow.attach({ hold: (reason) => target.push(`hold: ${reason}`), release: (prefetch) => target.push(`release ${prefetch ?? 'normal'}`) });
  const settled: string[] = [];
  const settle = (n: number) => ({ ack: () => settled.push(`ack ${n}`), nack: (requeue: boolean) => settled.push(`nack ${n} ${requeue}`) });
  const signal = new AbortController().signal;
  return { flow, target, settled, settle, signal, tick: (ms: number) => (now += ms) };
}

/** The breaker and hand-over steps around a handler call, in the order the delivery chain puts them. */
function counted(flow: QueueFlowControl, invoke: HandlerInvoker, isRetryable: (error: unknown) => boolean): HandlerInvoker {
  const policy = { maxAttempts: 1, delaysMs: [], isRetryable };
  const handOver = flow.handOverStep();
  const inner = handOver ? handOver(invoke) : invoke;
  return flow.breakerStep(() => policy)?.(inner) ?? inner;
}

describe('QueueFlowControl', () => {
  it('without a breaker, a limit or a pause, calls the handler as it is', async () => {
    const { flow, settle, signal, settled } = flowOf({});
    const handle = jest.fn(async (_m: ConsumeMessage, s: { ack(): void }) => s.ack());
    await flow.gate(handle)(message(1), settle(1), signal);
    expect(handle).toHaveBeenCalledTimes(1);
    expect(settled).toEqual(['ack 1']);
  });

  it('paused: holds the consumer, puts back a delivery already on its way without calling the handler, releases on resume', async () => {
    const { flow, target, settled, settle, signal } = flowOf({});
    const handle = jest.fn(async (_m: ConsumeMessage) => undefined);
    expect(flow.pause('alice', 'INC-1').state).toBe('paused');
    await flow.gate(handle)(message(1), settle(1), signal);
    expect(handle).not.toHaveBeenCalled();
    expect(settled).toEqual(['nack 1 true']);
    expect(flow.pause('bob').paused).toMatchObject({ by: 'alice', reason: 'INC-1' }); // the first pause's record stays
    flow.resume('bob');
    expect(target).toEqual(['hold: the queue is paused', 'release normal']);
  });

  it('names the broker user a control command was sent as in its log line, beside the `by` the command claims', () => {
    const lines: string[] = [];
    const logger = { ...silent, log: (line: string) => void lines.push(line), warn: (line: string) => void lines.push(line) };
    const flow = new QueueFlowControl(configOf({}), { logger, now: () => 0 });
    flow.pause('alice (on-call)', 'INC-1', 'ops');
    flow.resume('alice', 'ops');
    expect(lines).toEqual([
      'Queue "orders" is now paused: paused by alice (on-call) (a command sent as broker user "ops"): INC-1',
      'Queue "orders" is now running: resumed by alice (a command sent as broker user "ops")',
    ]);
  });

  it('its prefetch in force is the consumer’s when lower (a quorum consumer isolating a suspect at 1)', () => {
    const { flow } = flowOf({ prefetch: 20 });
    let consumed = 1;
    flow.attach({
      hold: () => undefined,
      release: () => undefined,
      get prefetch() {
        return consumed;
      },
    });
    expect(flow.prefetch).toBe(1);
    consumed = 20;
    expect(flow.prefetch).toBe(20);
  });

  it('a consumer attached later (a new one after a hand-over) starts held while paused, and as usual while running', () => {
    const { flow, target } = flowOf({});
    const next: string[] = [];
    const consumer = { hold: (reason: string) => next.push(`hold: ${reason}`), release: () => next.push('release') };
    flow.attach(consumer);
    expect(next).toEqual([]);
    flow.pause('alice');
    flow.attach(consumer);
    expect(next).toEqual(['hold: the queue is paused', 'hold: the queue is paused']);
    expect(target).toEqual([]); // the first consumer is no longer the flow's
  });

  it('counts retryable failures only, opens, half-opens on its timer with the trial prefetch, and closes on success', async () => {
    jest.useFakeTimers();
    try {
      const { flow, target, settle, signal } = flowOf({ circuitBreaker: { consecutiveFailures: 2, openFor: '1s', halfOpenCalls: 2 } });
      let outcome: unknown = new NonRetryableError('bad order');
      const invoke = counted(
        flow,
        async () => {
          if (outcome) throw outcome;
        },
        (error) => !(error instanceof NonRetryableError),
      );
      const handle = (m: ConsumeMessage) =>
        invoke({}, { message: m, signal } as RetryContext).then(
          () => undefined,
          () => undefined,
        );
      const run = (n: number) => flow.gate(handle)(message(n), settle(n), signal);
      await run(1);
      await run(2);
      await run(3);
      expect(flow.status().circuit).toBe('closed'); // non-retryable errors never count
      outcome = new Error('503');
      await run(4);
      await run(5);
      expect(flow.status()).toMatchObject({ state: 'open', circuit: 'open', openUntil: new Date(1_000).toISOString() });
      jest.advanceTimersByTime(1_000);
      expect(flow.status().state).toBe('half-open');
      expect(flow.prefetch).toBe(2); // what the ordering step's holds are bounded by
      outcome = undefined;
      await run(6);
      await run(7);
      expect(flow.status().state).toBe('running');
      expect(flow.prefetch).toBe(20); // the configured one
      expect(target).toEqual(['hold: the queue is open', 'release 2', 'release normal']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('half-open: a delivery beyond the trials waits (not requeued in a loop) until a place is free', async () => {
    jest.useFakeTimers();
    try {
      const { flow, settle, signal, settled } = flowOf({ circuitBreaker: { consecutiveFailures: 1, openFor: '1s', halfOpenCalls: 1 } });
      let finishTrial!: () => void;
      const calls: number[] = [];
      const invoke = counted(
        flow,
        async (payload) => {
          calls.push(payload as number);
          if (payload === 0) throw new Error('503');
          if (payload === 1) await new Promise<void>((resolve) => (finishTrial = resolve));
        },
        () => true,
      );
      const handle = (m: ConsumeMessage, s: { ack(): void }) =>
        invoke(m.fields.deliveryTag, { message: m, signal } as RetryContext).then(
          () => s.ack(),
          () => undefined,
        );
      await flow.gate(handle)(message(0), settle(0), signal); // opens
      jest.advanceTimersByTime(1_000);
      const trial = flow.gate(handle)(message(1), settle(1), signal);
      const extra = flow.gate(handle)(message(2), settle(2), signal);
      await Promise.resolve();
      expect(calls).toEqual([0, 1]);
      finishTrial();
      await trial;
      await extra;
      expect(calls).toEqual([0, 1, 2]);
      expect(settled).toEqual(['ack 1', 'ack 2']);
      expect(flow.status().state).toBe('running');
    } finally {
      jest.useRealTimers();
    }
  });

  it('stop(): no timer left, a waiting delivery is let go unhandled for the closing channel to return', async () => {
    const { flow, settle, signal, settled } = flowOf({ rateLimit: { calls: 1, per: '1h' } });
    const handle = jest.fn(async (_m: ConsumeMessage, s: { ack(): void }) => s.ack());
    await flow.gate(handle)(message(1), settle(1), signal);
    const waiting = flow.gate(handle)(message(2), settle(2), signal);
    flow.stop();
    await waiting;
    expect(handle).toHaveBeenCalledTimes(1);
    expect(settled).toEqual(['ack 1']);
  });

  it('stopped while deliveries wait for their ordering key: each goes back to the broker in delivery order, none reaches the handler', async () => {
    for (const stop of ['pause', 'open'] as const) {
      const { flow, settle, signal, settled } = flowOf({ ordering: { key: () => 'k' }, circuitBreaker: { consecutiveFailures: 1 } });
      const calls: number[] = [];
      let fail!: () => void;
      const running = new Promise<void>((_resolve, reject) => (fail = () => reject(new Error('503'))));
      const invoke = counted(
        flow,
        async (payload) => {
          calls.push(payload as number);
          if (payload === 1) await running;
        },
        () => true,
      );
      // The key's line: message 1 runs, 2 and 3 wait for its turn (a stand-in for the ordered invoker).
      const turns: Array<() => void> = [];
      const handle = async (m: ConsumeMessage, s: { ack(): void }, sig: AbortSignal) => {
        const n = m.fields.deliveryTag;
        if (n > 1) {
          await new Promise<void>((resolve) => {
            turns.push(resolve);
            sig.addEventListener('abort', () => resolve(), { once: true });
          });
        }
        await invoke(n, { message: m, signal: sig, attempt: 1 } as RetryContext).then(
          () => s.ack(),
          () => undefined,
        );
        turns.shift()?.();
      };
      const deliveries = [1, 2, 3].map((n) => flow.gate(handle)(message(n), settle(n), signal));
      await Promise.resolve();
      if (stop === 'pause') flow.pause('ops');
      else fail(); // the failure of message 1 opens the circuit
      await new Promise((resolve) => setImmediate(resolve));
      expect({ stop, settled }).toEqual({ stop, settled: ['nack 2 true', 'nack 3 true'] });
      if (stop === 'pause') fail();
      await Promise.all(deliveries);
      expect({ stop, calls }).toEqual({ stop, calls: [1] });
      expect({ stop, settled }).toEqual({ stop, settled: ['nack 2 true', 'nack 3 true'] });
    }
  });

  it('a quorum queue notes each delivery it takes back, so that the return is not counted as a crash', async () => {
    const { flow, settle, signal, settled } = flowOf({ ordering: { key: () => 'k' }, queueType: 'quorum' });
    const handle = (_m: ConsumeMessage, _s: unknown, sig: AbortSignal) =>
      new Promise<void>((resolve) => sig.addEventListener('abort', () => resolve()));
    const delivery = { ...message(7), fields: { deliveryTag: 7, exchange: '', routingKey: 'orders' } } as unknown as ConsumeMessage;
    const waiting = flow.gate(handle)(delivery, settle(7), signal);
    flow.pause('ops');
    await waiting;
    expect(settled).toEqual(['nack 7 true']);
    expect(flow.returns.isEmpty).toBe(false);
  });

  it('a call that fails once its delivery is lost (the channel closed, a hand-over) is no outcome: our reconnection opens no circuit', async () => {
    const { flow, settle, signal } = flowOf({ circuitBreaker: { consecutiveFailures: 1 } });
    const channel = new AbortController();
    // The handler passes its signal on (fetch, a driver): the lost channel aborts the call, which then fails; a call
    // on a channel still open fails on its own.
    const invoke = counted(
      flow,
      (_payload, context) =>
        new Promise((_resolve, reject) => {
          if (!context.signal.aborted && context.signal !== channel.signal) reject(new Error('503'));
          context.signal.addEventListener('abort', () => reject(new Error('aborted')));
        }),
      () => true,
    );
    const handle = async (m: ConsumeMessage, _s: unknown, sig: AbortSignal) =>
      void (await invoke(1, { message: m, signal: sig, attempt: 1 } as RetryContext).catch(() => undefined));
    const running = [1, 2, 3].map((n) => flow.gate(handle)(message(n), settle(n), channel.signal));
    channel.abort(new Error('the channel consuming "orders" closed'));
    await Promise.all(running);
    expect(flow.status()).toMatchObject({ state: 'running', circuit: 'closed' });
    await flow.gate(handle)(message(4), settle(4), signal);
    expect(flow.status()).toMatchObject({ state: 'open', circuit: 'open' }); // a failure on a live channel still counts
  });

  it('single active consumer: a pause takes a waiting delivery back unsettled (noted), for the closing channel to return in its place', async () => {
    const { flow, settle, signal, settled } = flowOf({ ordering: { key: () => 'k' }, queueType: 'quorum', singleActiveConsumer: true });
    let calls = 0;
    const invoke = counted(
      flow,
      async () => void calls++,
      () => true,
    );
    const handle = async (m: ConsumeMessage, _s: unknown, sig: AbortSignal) => {
      await new Promise<void>((resolve) => sig.addEventListener('abort', () => resolve(), { once: true }));
      await invoke(1, { message: m, signal: sig, attempt: 1 } as RetryContext).catch(() => undefined);
    };
    const delivery = { ...message(7), fields: { deliveryTag: 7, exchange: '', routingKey: 'orders' } } as unknown as ConsumeMessage;
    const waiting = flow.gate(handle)(delivery, settle(7), signal);
    flow.pause('ops');
    await waiting;
    expect({ calls, settled, noted: !flow.returns.isEmpty }).toEqual({ calls: 0, settled: [], noted: true });
  });

  it('a delivery taken back by a pause is no outcome for the breaker: the circuit stays closed, the queue runs on resume', async () => {
    const { flow, settle, signal, settled } = flowOf({ ordering: { key: () => 'k' }, circuitBreaker: { consecutiveFailures: 1 } });
    let calls = 0;
    const invoke = counted(
      flow,
      async () => void calls++,
      () => true,
    );
    // Waits (as for its key's turn) until the pause takes it back, then goes on to the call, which hand-over refuses.
    const handle = async (m: ConsumeMessage, _s: unknown, sig: AbortSignal) => {
      await new Promise<void>((resolve) => sig.addEventListener('abort', () => resolve(), { once: true }));
      await invoke(1, { message: m, signal: sig, attempt: 1 } as RetryContext).catch(() => undefined);
    };
    const waiting = flow.gate(handle)(message(1), settle(1), signal);
    flow.pause('ops');
    await waiting;
    expect({ calls, settled }).toEqual({ calls: 0, settled: ['nack 1 true'] });
    expect(flow.resume('ops')).toMatchObject({ state: 'running', circuit: 'closed' });
  });
});
