import { Injectable, Module, type Type } from '@nestjs/common';
import { NonRetryableError, RetryModule, RetryWithBackoff, type RetryContext, type RetryModuleOptions } from 'nestjs-amqp-retry';
import type { HarnessAttempt } from 'nestjs-amqp-retry/testing';

/** A message a scenario publishes: a JSON body, or raw text; `headers` as a client would send them. */
export interface ScenarioMessage {
  messageId: string;
  body: unknown;
  raw?: boolean;
  /** Headers as a client would send them, given the handler's queue name. */
  headers?: (queue: string) => Record<string, unknown>;
  /** Published with RetryPublisher after this delay instead of by an outside client. */
  delay?: string;
}

/** One behaviour, run on the harness and on a real broker, whose traces must be equal. */
export interface Scenario {
  name: string;
  delays: string[];
  maxAttempts: number;
  queueType?: 'classic' | 'quorum';
  /** The handler: throws to fail. */
  behaviour(body: Record<string, unknown>, ctx: RetryContext): void;
  messages: ScenarioMessage[];
  /** How many messages end parked (read from the error queue). */
  parked: number;
  delayedDelivery?: boolean;
  /** Ordering per key (the body's `k`): the order of every attempt of every message is compared too. */
  ordering?: 'continue' | 'hold';
}

const failUntil = (body: Record<string, unknown>, ctx: RetryContext) => {
  if (body.kind === 'fatal') throw new NonRetryableError('refused for good');
  if (ctx.attempt < Number(body.succeedAt ?? Infinity)) throw new Error(`failure ${ctx.attempt}`);
};

/** The scenarios, short enough in time for a real broker (tiers of 200 and 400 ms). */
export const SCENARIOS: Scenario[] = [
  {
    name: 'retry, then success on the third attempt',
    delays: ['200ms', '400ms'],
    maxAttempts: 4,
    behaviour: failUntil,
    messages: [{ messageId: 'm-1', body: { succeedAt: 3 } }],
    parked: 0,
  },
  {
    name: 'exhaustion: the last tier repeats, then the message is parked',
    delays: ['200ms', '400ms'],
    maxAttempts: 4,
    behaviour: failUntil,
    messages: [{ messageId: 'm-1', body: {} }],
    parked: 1,
  },
  {
    name: 'a non-retryable error and a malformed body are parked at once',
    delays: ['200ms'],
    maxAttempts: 3,
    behaviour: failUntil,
    messages: [
      { messageId: 'm-1', body: { kind: 'fatal' } },
      { messageId: 'm-2', body: '{not json', raw: true },
    ],
    parked: 2,
  },
  {
    name: 'a delay of zero and a retry in between',
    delays: ['0ms', '200ms'],
    maxAttempts: 3,
    behaviour: failUntil,
    messages: [{ messageId: 'm-1', body: { succeedAt: 3 } }],
    parked: 0,
  },
  {
    name: 'a delayed publish arrives once, handled at its first attempt',
    delays: ['200ms'],
    maxAttempts: 2,
    behaviour: failUntil,
    messages: [{ messageId: 'm-1', body: { succeedAt: 1 }, delay: '300ms' }],
    parked: 0,
    delayedDelivery: true,
  },
  {
    name: 'a client-published (forged) x-death: the count the library reads, and what the broker does with it',
    delays: ['200ms'],
    maxAttempts: 4,
    behaviour: failUntil,
    messages: [
      {
        messageId: 'm-1',
        body: {},
        headers: (queue) => ({
          'x-death': [{ queue, reason: 'rejected', count: 1, exchange: `${queue}.in`, 'routing-keys': ['conformance.key'] }],
        }),
      },
    ],
    parked: 1,
  },
  {
    name: "ordering per key, 'continue': a later message of the key runs while the first waits in its tier",
    delays: ['300ms'],
    maxAttempts: 3,
    behaviour: failUntil,
    messages: [
      { messageId: 'm-1', body: { k: 'a', succeedAt: 2 } },
      { messageId: 'm-2', body: { k: 'a', succeedAt: 1 } },
    ],
    parked: 0,
    ordering: 'continue',
  },
  {
    name: "ordering per key, 'hold': the later message waits until the retried one is handled",
    delays: ['300ms'],
    maxAttempts: 3,
    behaviour: failUntil,
    messages: [
      { messageId: 'm-1', body: { k: 'a', succeedAt: 2 } },
      { messageId: 'm-2', body: { k: 'a', succeedAt: 1 } },
    ],
    parked: 0,
    ordering: 'hold',
  },
  {
    name: 'a quorum queue: retried and exhausted like a classic one',
    delays: ['200ms'],
    maxAttempts: 3,
    queueType: 'quorum',
    behaviour: failUntil,
    messages: [{ messageId: 'm-1', body: {} }],
    parked: 1,
  },
];

/** The application of a scenario: one handler on `queue`, fed through `exchange` with key `key`. */
export function scenarioModule(scenario: Scenario, names: { queue: string; exchange: string }, options: RetryModuleOptions): Type<unknown> {
  @Injectable()
  class ScenarioHandler {
    @RetryWithBackoff({
      queue: names.queue,
      exchange: names.exchange,
      routingKey: 'conformance.key',
      delays: scenario.delays,
      maxAttempts: scenario.maxAttempts,
      ...(scenario.queueType ? { queueType: scenario.queueType } : {}),
      ...(scenario.ordering ? { ordering: { key: (body: unknown) => String((body as { k?: unknown }).k), whileRetrying: scenario.ordering } } : {}),
    })
    handle(body: Record<string, unknown>, ctx: RetryContext): void {
      scenario.behaviour(body, ctx);
    }
  }
  @Module({ imports: [RetryModule.forRoot({ ...options, delayedDelivery: scenario.delayedDelivery ?? false })], providers: [ScenarioHandler] })
  class ScenarioModule {}
  return ScenarioModule;
}

/** The headers of a parked copy that must be the same on both (no times, ids or stacks). */
const COMPARED_HEADERS = [
  'x-parked-reason',
  'x-exception-message',
  'x-original-queue',
  'x-original-exchange',
  'x-original-routing-key',
  'x-retry-attempts',
  'x-first-death-queue',
  'x-first-death-reason',
];

/** What a scenario produced, in a form to compare: queue names replaced by Q, nothing that depends on time. */
export interface Trace {
  attempts: Record<string, string[]>;
  parked: Array<Record<string, unknown>>;
  /** Ordering scenarios: every attempt of every message, in the order they started. */
  order?: string[];
}

/** The order attempts started in, with what came of each, for the ordering scenarios. */
export const orderTrace = (attempts: readonly HarnessAttempt[]): string[] => attempts.map((a) => `${a.messageId}:${a.attempt}:${a.outcome}`);

const text = (value: unknown): unknown => (Buffer.isBuffer(value) ? value.toString() : value);

/** The death headers the broker wrote on a delivery: x-death in its order, the first and last death, the delivery count. */
function deathTrace(headers: Record<string, unknown>, queue: string): string {
  const name = (value: unknown) => String(text(value)).split(queue).join('Q');
  const deaths = Array.isArray(headers['x-death']) ? (headers['x-death'] as Array<Record<string, unknown>>) : [];
  const entries = deaths.map((d) => {
    const keys = Array.isArray(d['routing-keys']) ? (d['routing-keys'] as unknown[]).map(name).join('+') : '';
    return `${name(d.queue)}/${name(d.reason)}/${Number(d.count)}/${name(d.exchange)}/${keys}`;
  });
  const named = ['x-first-death-queue', 'x-first-death-reason', 'x-last-death-queue', 'x-last-death-reason', 'x-delivery-count']
    .filter((key) => key in headers)
    .map((key) => `${key}=${name(headers[key])}`);
  return [entries.join(' '), ...named].join(' | ');
}

/** Each attempt: number, tier, outcome, park reason, next tier, and the death headers it was delivered with. */
export function attemptTrace(attempts: readonly HarnessAttempt[], queue: string): string[] {
  return attempts.map((a) =>
    [a.attempt, a.tier ?? '-', a.outcome, a.parkReason ?? '', a.retryTier ?? '', a.redelivered, deathTrace(a.headers, queue)].join(':'),
  );
}

export function parkedTrace(headers: Record<string, unknown>, messageId: unknown, queue: string): Record<string, unknown> {
  const name = (value: unknown) => (typeof value === 'string' ? value.split(queue).join('Q') : value);
  const picked: Record<string, unknown> = { messageId };
  for (const key of COMPARED_HEADERS) if (key in headers) picked[key] = name(text(headers[key]));
  const deaths = Array.isArray(headers['x-death']) ? (headers['x-death'] as Array<Record<string, unknown>>) : [];
  picked.deaths = deaths.map((d) => `${String(name(text(d.queue)))}/${String(text(d.reason))}/${Number(d.count)}`).sort();
  return picked;
}
