import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { BrokerControl } from '../support/broker-control.js';

/** One sample of the soak test, taken at a quiet point (load paused, every message accounted for). */
export interface SoakSample {
  /** Minutes since the start of the run. */
  minute: number;
  /** MB, after a full GC when node runs with --expose-gc (npm run test:soak does). */
  rssMb: number;
  heapMb: number;
  /** What RSS holds besides the live heap: the heap V8 keeps committed, and buffers outside it (sockets, frames). */
  heapTotalMb: number;
  externalMb: number;
  arrayBuffersMb: number;
  /** Event-loop delay since the previous sample, ms. */
  lagP99Ms: number;
  lagMaxMs: number;
  /** The library's connections, their channels and its consumers, as the broker lists them. */
  connections: number;
  channels: number;
  consumers: number;
  /** process.getActiveResourcesInfo(), counted by type (Timeout, TCPSocketWrap, ...). */
  resources: Record<string, number>;
  /** Messages published (confirmed), handled, parked then replayed, and publishes rejected since the start. */
  published: number;
  handled: number;
  replayed: number;
  rejected: number;
  /** What happened just before this sample: a connection kill, the memory alarm. */
  event?: string;
}

const MB = 1024 * 1024;

export const countResources = (): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
};

/** Timers and sockets: what a leak after a reconnection would add. */
export const leakable = (resources: Record<string, number>) => (resources.Timeout ?? 0) + (resources.TCPSocketWrap ?? 0);

/** The broker's view of one application's connections (those whose name starts with `prefix`) on a node of ours. */
export async function brokerView(control: BrokerControl, prefix: string, queuePrefix: string) {
  const connections = (await control.ctl('list_connections', 'channels', 'client_properties', '-q', '--no-table-headers'))
    .split('\n')
    .filter((line) => line.includes(`{"connection_name","${prefix}`));
  const channels = connections.reduce((sum, line) => sum + Number(line.split('\t')[0]), 0);
  const consumers = (await control.ctl('list_consumers', 'queue_name', '-q', '--no-table-headers'))
    .split('\n')
    .filter((line) => line.startsWith(queuePrefix)).length;
  return { connections: connections.length, channels, consumers };
}

/** RSS, heap and event-loop delay of this process. */
export class ProcessSampler {
  private readonly lag: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });

  constructor() {
    this.lag.enable();
  }

  sample() {
    (globalThis as { gc?: () => void }).gc?.();
    const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
    const sample = {
      rssMb: rss / MB,
      heapMb: heapUsed / MB,
      heapTotalMb: heapTotal / MB,
      externalMb: external / MB,
      arrayBuffersMb: arrayBuffers / MB,
      lagP99Ms: this.lag.percentile(99) / 1e6,
      lagMaxMs: this.lag.max / 1e6,
      resources: countResources(),
    };
    this.lag.reset();
    return sample;
  }

  stop(): void {
    this.lag.disable();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * Growth of a figure after warm-up: the median of the last three samples over the median of the first three after
 * warm-up (medians, so that one GC's timing does not decide).
 */
export function growth(samples: SoakSample[], warmUp: number, figure: (s: SoakSample) => number): { from: number; to: number; ratio: number } {
  const after = samples.slice(warmUp);
  const from = median(after.slice(0, 3).map(figure));
  const to = median(after.slice(-3).map(figure));
  return { from, to, ratio: to / from };
}
