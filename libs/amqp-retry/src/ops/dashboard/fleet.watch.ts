import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { FleetHistory, type FleetInstance, type FleetSummary, type QueueHistory } from '../../core/observe/heartbeat/fleet.history.js';
import { RetryEngine } from '../../engine/retry.engine.js';
import { DASHBOARD_CONFIG } from './dashboard.constants.js';
import type { DashboardConfig } from './dashboard.options.js';

/** What `GET api/fleet` answers: the application's instances and the summary strip, at the page instance's `now`. */
export interface FleetView {
  /** The page instance's clock (epoch ms): every time shown is relative to it. */
  now: number;
  /** Beats an instance may miss before it shows as gone. */
  missedBeats: number;
  /** This instance's beat interval (ms): an instance that stops shows as gone within missedBeats of its intervals. */
  intervalMs: number;
  instances: FleetInstance[];
  summary: FleetSummary;
}

/**
 * The page's instance: starts the heartbeat of this instance and keeps every instance's beats (FleetHistory), for the
 * application's queues only (those it parks for, and its partitioned handlers): a beat naming another queue adds
 * nothing for it.
 */
@Injectable()
export class FleetWatch implements OnApplicationBootstrap {
  readonly fleet: FleetHistory;

  constructor(
    @Inject(RetryEngine) private readonly engine: RetryEngine,
    @Inject(DASHBOARD_CONFIG) private readonly config: DashboardConfig,
  ) {
    this.fleet = new FleetHistory({}, (queue) => this.inScope(queue));
  }

  onApplicationBootstrap(): void {
    this.engine.startHeartbeat(this.fleet, this.config.heartbeatIntervalMs);
  }

  view(now = Date.now()): FleetView {
    return { now, missedBeats: this.fleet.limits.missedBeats, intervalMs: this.config.heartbeatIntervalMs, instances: this.fleet.instancesAt(now), summary: this.fleet.summaryAt(now) };
  }

  history(minutes: number, now = Date.now()): { now: number; queues: QueueHistory[] } {
    return { now, queues: this.fleet.historyAt(now, minutes) };
  }

  private inScope(queue: string): boolean {
    return this.engine.parkingQueues().some((q) => q.queue === queue) || this.engine.partitions().some((p) => p.queue === queue);
  }
}
