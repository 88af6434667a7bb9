import type { EngineHealth } from '../engine/retry.engine.js';

/** What a health endpoint shows of the engine: every connection and queue, and the problems in words. */
export interface HealthReport {
  healthy: boolean;
  connections: Record<string, 'up' | 'down' | 'not opened'>;
  queues: Record<string, 'consuming' | 'not consuming'>;
  problems: string[];
}

/** Down while a connection is down or a queue is not consumed; a connection not opened yet is no problem. */
export function describeHealth({ connections, queues }: EngineHealth): HealthReport {
  const problems: string[] = [];
  const shown: HealthReport['connections'] = {};
  for (const role of ['consume', 'publish'] as const) {
    const up = connections[role];
    shown[role] = up === undefined ? 'not opened' : up ? 'up' : 'down';
    if (up === false) problems.push(`the ${role} connection to RabbitMQ is down`);
  }
  const queueStates: HealthReport['queues'] = {};
  for (const { queue, consuming } of queues) {
    queueStates[queue] = consuming ? 'consuming' : 'not consuming';
    if (!consuming) problems.push(`"${queue}" is not consumed`);
  }
  return { healthy: problems.length === 0, connections: shown, queues: queueStates, problems };
}
