// The outage scenario of docs/outage-protection.md, shared by test/outage-protection/outage.e2e-spec.ts and
// bench/scenarios/outage.scenario.ts: messages published at a steady rate to two handler queues at once, one without
// and one with a circuit breaker, both calling one dependency that fails every call for a while in the middle of
// the run. It reports, for each queue, what happened to the messages and how many handler calls the outage cost.
import { randomUUID } from 'node:crypto';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import amqp from 'amqplib';
import { RetryModule, RetryWithBackoff, type CircuitBreakerOptions, type QueueStateEvent, type RetryContext } from 'nestjs-amqp-retry';

export interface OutageSettings {
  url: string;
  messages: number;
  ratePerSecond: number;
  /** When the dependency goes down, after the first publish. */
  outageStartMs: number;
  outageMs: number;
  delays: string[];
  /** The same in milliseconds (the tier queues' names carry them). */
  delaysMs: number[];
  maxAttempts: number;
  breaker: CircuitBreakerOptions;
  /** How long after the recovery every message must have been handled (the README's promise). */
  settleWithinMs: number;
  /** The handler queues' type (OUTAGE_QUEUE_TYPE): 'classic' (default) or 'quorum'. */
  queueType: 'classic' | 'quorum';
}

/** What happened on one queue. */
export interface OutageFigures {
  queue: string;
  breaker: boolean;
  messages: number;
  /** Messages whose handler succeeded (each counted once). */
  handled: number;
  /** Messages in the error queue: good messages, parked only because the dependency was down. */
  parked: number;
  /** Neither handled nor parked when the run ended. */
  lost: number;
  handlerCalls: number;
  /** Handler calls while the dependency was down. */
  callsDuringOutage: number;
  /** How long after the recovery the last message was handled (0 if all were before). */
  lastHandledAfterRecoveryMs: number;
  /** The queue's changes of state (circuit opened, half-opened, closed). */
  transitions: number;
}

/** The outage scenario (docs/outage-protection.md), each figure overridable from the environment so that CI can run a smaller one. */
export function outageSettings(env: Record<string, string | undefined>, url: string): OutageSettings {
  const number = (name: string, fallback: number) => {
    const raw = env[name];
    const value = raw === undefined || raw.trim() === '' ? fallback : Number(raw);
    if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} is "${raw}"; use a positive number`);
    return value;
  };
  const messages = Math.round(number('OUTAGE_N', 5_000));
  const ratePerSecond = number('OUTAGE_RATE', 100);
  const outageMs = number('OUTAGE_SECONDS', 60) * 1_000;
  // In the middle of the run: after a fifth of the publishing time, so traffic flows before, during and after it.
  const outageStartMs = number('OUTAGE_START_SECONDS', (messages / ratePerSecond) * 0.2) * 1_000;
  const queueType = env.OUTAGE_QUEUE_TYPE ?? 'classic';
  if (queueType !== 'classic' && queueType !== 'quorum') throw new Error(`OUTAGE_QUEUE_TYPE is "${queueType}"; use classic or quorum`);
  return {
    url,
    queueType,
    messages,
    ratePerSecond,
    outageStartMs,
    outageMs,
    delays: ['1s', '5s', '10s'],
    delaysMs: [1_000, 5_000, 10_000],
    maxAttempts: 4,
    breaker: { failureRate: 0.5, minimumCalls: 20, window: '10s', openFor: '1s', maxOpenFor: '10s', halfOpenCalls: 1 },
    settleWithinMs: 30_000,
  };
}

interface Tally {
  calls: number[];
  handled: Set<number>;
  lastHandledAt: number;
  transitions: QueueStateEvent[];
}

const newTally = (): Tally => ({ calls: [], handled: new Set(), lastHandledAt: 0, transitions: [] });

/** Two fresh handler queue names; the caller deletes them (and their tiers) after the run, whatever happens. */
export function outageQueues(prefix: string): { without: string; with: string } {
  const tag = randomUUID().slice(0, 8);
  return { without: `${prefix}.without-breaker.${tag}`, with: `${prefix}.with-breaker.${tag}` };
}

/** Runs the scenario on the two queues `names` and returns the figures of both. */
export async function runOutage(
  settings: OutageSettings,
  names: { without: string; with: string },
  log: (line: string) => void = () => undefined,
): Promise<{ without: OutageFigures; with: OutageFigures }> {
  const outage = { from: Infinity, to: Infinity };
  const dependency = () => {
    const now = Date.now();
    if (now >= outage.from && now < outage.to) throw new Error('payments API: 503 Service Unavailable');
  };
  const tallies = { without: newTally(), with: newTally() };
  const handler = (tally: Tally) => async (body: { id: number }) => {
    tally.calls.push(Date.now());
    dependency();
    if (!tally.handled.has(body.id)) {
      tally.handled.add(body.id);
      tally.lastHandledAt = Date.now();
    }
  };
  const onWithout = handler(tallies.without);
  const onWith = handler(tallies.with);
  const { delays, maxAttempts } = settings;

  @Injectable()
  class WithoutBreaker {
    @RetryWithBackoff({ queue: names.without, delays, maxAttempts })
    async handle(body: { id: number }, _context: RetryContext): Promise<void> {
      await onWithout(body);
    }
  }

  @Injectable()
  class WithBreaker {
    @RetryWithBackoff({ queue: names.with, delays, maxAttempts, circuitBreaker: settings.breaker })
    async handle(body: { id: number }, _context: RetryContext): Promise<void> {
      await onWith(body);
    }
  }

  const observer = {
    queueStateChanged: (event: QueueStateEvent) => {
      (event.queue === names.with ? tallies.with : tallies.without).transitions.push(event);
      log(`  ${event.queue === names.with ? 'with breaker' : 'without'}: ${event.from} -> ${event.to} (${event.reason})`);
    },
  };

  @Module({
    imports: [RetryModule.forRoot({ url: settings.url, queueType: settings.queueType, delayedDelivery: false, observers: [observer] })],
    providers: [WithoutBreaker, WithBreaker],
  })
  class OutageModule {}

  const app = await NestFactory.createApplicationContext(OutageModule, { logger: false });
  const connection = await amqp.connect(settings.url);
  const channel = await connection.createConfirmChannel();
  const errorCount = async (queue: string) => (await channel.checkQueue(`${queue}.error`)).messageCount;
  try {
    const startedAt = Date.now();
    outage.from = startedAt + settings.outageStartMs;
    outage.to = outage.from + settings.outageMs;
    log(
      `  publishing ${settings.messages} messages at ${settings.ratePerSecond}/s to each queue; the dependency fails from ${settings.outageStartMs / 1000}s for ${settings.outageMs / 1000}s`,
    );
    for (let id = 0; id < settings.messages; id++) {
      const wait = startedAt + (id * 1_000) / settings.ratePerSecond - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const body = Buffer.from(JSON.stringify({ id }));
      for (const queue of [names.without, names.with]) channel.sendToQueue(queue, body, { persistent: true, contentType: 'application/json' });
      if (id % 100 === 99) await channel.waitForConfirms();
    }
    await channel.waitForConfirms();
    // Done when every message was handled or parked, or when the promise is broken by far.
    const deadline = Math.max(outage.to, Date.now()) + settings.settleWithinMs + 60_000;
    let parked = { without: 0, with: 0 };
    for (;;) {
      parked = { without: await errorCount(names.without), with: await errorCount(names.with) };
      const settled = (['without', 'with'] as const).every((k) => tallies[k].handled.size + parked[k] >= settings.messages);
      if ((settled && Date.now() > outage.to) || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const figures = (key: 'without' | 'with'): OutageFigures => {
      const tally = tallies[key];
      return {
        queue: names[key],
        breaker: key === 'with',
        messages: settings.messages,
        handled: tally.handled.size,
        parked: parked[key],
        lost: settings.messages - tally.handled.size - parked[key],
        handlerCalls: tally.calls.length,
        callsDuringOutage: tally.calls.filter((at) => at >= outage.from && at < outage.to).length,
        lastHandledAfterRecoveryMs: Math.max(0, tally.lastHandledAt - outage.to),
        transitions: tally.transitions.length,
      };
    };
    return { without: figures('without'), with: figures('with') };
  } finally {
    await app.close();
    await connection.close().catch(() => undefined);
  }
}

/** One line per queue, for the test's output and the bench's progress. */
export function describeOutage(f: OutageFigures): string {
  const share = ((100 * f.callsDuringOutage) / f.messages).toFixed(1);
  return (
    `${f.breaker ? 'with breaker   ' : 'without breaker'}: ${f.parked} good message(s) parked, ${f.lost} lost, ${f.handled}/${f.messages} handled; ` +
    `${f.callsDuringOutage} handler calls during the outage (${share}% of the messages), ${f.handlerCalls} in all; ` +
    `last message handled ${(f.lastHandledAfterRecoveryMs / 1000).toFixed(1)} s after the recovery; ${f.transitions} state change(s)`
  );
}
