import type { EngineHealth } from '../engine/engine.views.js';

/** What a health endpoint shows of the engine: every connection and queue, and the problems in words. */
export interface HealthReport {
  /** False while any of `problems` holds. */
  healthy: boolean;
  /** Each connection (`consume`, `publish`) by name: up, down, or not opened yet. */
  connections: Record<string, 'up' | 'down' | 'not opened'>;
  /** 'paused', 'open' and 'half-open': not consumed on purpose (an operator's pause, the circuit breaker), and healthy. */
  queues: Record<string, 'consuming' | 'not consuming' | 'paused' | 'open' | 'half-open'>;
  /** The outbox relay of this instance, when it runs one. */
  outbox?: 'relaying' | 'cannot publish';
  /** What makes it unhealthy, in words; empty when healthy. */
  problems: string[];
}

/**
 * Down while a connection is down, a queue is not consumed, or the outbox relay cannot publish. A paused or open
 * queue is no problem: an orchestrator that restarted the application would only lose that state.
 */
export function describeHealth({ connections, queues, outbox }: EngineHealth): HealthReport {
  const problems: string[] = [];
  const shown: HealthReport['connections'] = {};
  for (const role of ['consume', 'publish'] as const) {
    const up = connections[role];
    shown[role] = up === undefined ? 'not opened' : up ? 'up' : 'down';
    if (up === false) problems.push(`the ${role} connection to RabbitMQ is down`);
  }
  const queueStates: HealthReport['queues'] = {};
  for (const { queue, consuming, state } of queues) {
    queueStates[queue] = !consuming ? 'not consuming' : state === undefined || state === 'running' ? 'consuming' : state;
    if (!consuming) problems.push(`"${queue}" is not consumed`);
  }
  if (outbox && !outbox.relaying) problems.push(outbox.problem ?? `the outbox relay of ${outbox.table} cannot publish`);
  const relay = outbox === undefined ? {} : { outbox: outbox.relaying ? ('relaying' as const) : ('cannot publish' as const) };
  return { healthy: problems.length === 0, connections: shown, queues: queueStates, ...relay, problems };
}
