import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { FleetHistory, type FleetInstance, type FleetSummary, type QueueHistory } from '../../core/observe/heartbeat/fleet.history.js';
import { RetryEngine } from '../../engine/retry.engine.js';
import { readHandlerRegistry } from '../../amqp/handler-registry.writer.js';
import { RecordedScope } from '../../core/observe/heartbeat/recorded.scope.js';
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
 * application's queues only (those this instance parks for, its partitioned handlers, and those the handler registry
 * records under the application's name, see RecordedScope): a beat naming another queue adds nothing for it. A queue
 * the page does not know yet has the registry read again (at most every 5 s) and counts from the next beat.
 */
@Injectable()
export class FleetWatch implements OnApplicationBootstrap {
  readonly fleet: FleetHistory;

  /** The application's handler queues as the registry records them; none without an application name. */
  private readonly recorded?: RecordedScope;
  private reading = false;

  constructor(
    @Inject(RetryEngine) private readonly engine: RetryEngine,
    @Inject(DASHBOARD_CONFIG) private readonly config: DashboardConfig,
  ) {
    this.fleet = new FleetHistory({}, (queue) => this.inScope(queue));
    const { application } = engine;
    if (application !== undefined) this.recorded = new RecordedScope(application);
  }

  onApplicationBootstrap(): void {
    this.readRecorded();
    this.engine.startHeartbeat(this.fleet, this.config.heartbeatIntervalMs);
  }

  view(now = Date.now()): FleetView {
    return {
      now,
      missedBeats: this.fleet.limits.missedBeats,
      intervalMs: this.config.heartbeatIntervalMs,
      instances: this.fleet.instancesAt(now),
      summary: this.fleet.summaryAt(now),
    };
  }

  history(minutes: number, now = Date.now()): { now: number; queues: QueueHistory[] } {
    return { now, queues: this.fleet.historyAt(now, minutes) };
  }

  private inScope(queue: string): boolean {
    const own = this.engine.parkingQueues().some((q) => q.queue === queue) || this.engine.partitions().some((p) => p.queue === queue);
    if (own || this.recorded?.has(queue)) return true;
    this.readRecorded(queue);
    return false;
  }

  /** Reads the handler registry for the application's queues, when RecordedScope says so and no read is under way. */
  private readRecorded(asked?: string): void {
    const recorded = this.recorded;
    const now = Date.now();
    if (!recorded || this.reading || !recorded.wantsRead(asked, now)) return;
    this.reading = true;
    recorded.reading(now);
    readHandlerRegistry(() => this.engine.publishingChannel('the console: recorded queues', true))
      .then(
        (records) => recorded.learn(records, asked, Date.now()),
        () => undefined, // the broker out of reach: what was learned stays, and a later beat asks again
      )
      .finally(() => (this.reading = false));
  }
}
