import type { Channel, ConsumeMessage } from 'amqplib';
import { SharedChannel } from '../amqp/channel-close.settler.js';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { CONTROL_EXCHANGE } from '../core/breaker/control.message.js';
import type { QueueFlowStatus } from '../core/breaker/queue.state.js';
import { errorMessage } from '../core/text/error-message.format.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { HeartbeatCollector } from '../core/observe/heartbeat/heartbeat.collector.js';
import {
  decodeHeartbeat,
  encodeHeartbeat,
  heartbeatKey,
  MAX_HEARTBEAT_QUEUES,
  type Heartbeat,
  type HeartbeatQueue,
} from '../core/observe/heartbeat/heartbeat.message.js';
import type { FleetHistory } from '../core/observe/heartbeat/fleet.history.js';
import { PRIVATE_QUEUE_OPTIONS } from '../core/topology/queue-type.mismatch.js';
import type { PartitionsStatus } from './partitions.runtime.js';
import type { PublishingSide } from './publishing.side.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import { brokerUsers } from '../core/config/broker-urls.reader.js';

/** Beats waiting in the page instance's heartbeat queue at most (older ones dropped by the broker). */
const LISTEN_QUEUE_LENGTH = 1_000;

/** What the heartbeat reads from the engine at each beat, and what it works with. */
export interface HeartbeatDeps {
  /** Each consumed queue and whether it is consumed now (EngineHealth.queues). */
  consumed: () => Array<{ queue: string; consuming: boolean }>;
  /** The flows of the unpartitioned handler queues (RetryEngine.queueStates). */
  flows: () => QueueFlowStatus[];
  /** The partitioned handlers (RetryEngine.partitions). */
  partitions: () => PartitionsStatus[];
  /**
   * The application's name, and its URLs: beats are published as the broker user of the publishing connection (AMQP
   * `user_id`, checked by the broker), and the listener takes only those of the URLs' users, so that another user who
   * may write to the control exchange cannot show instances of this application.
   */
  config: Pick<ModuleConfig, 'application' | 'urls'>;
  intervalMs: number;
  logger: RetryLogger;
  collector: HeartbeatCollector;
  /** Plain channels on the publishing connection (for the beats), and the user beats go as now. */
  publishing: Pick<PublishingSide, 'channel' | 'user'>;
  /** A plain channel on the consuming connection (to listen to the beats). */
  consumeChannel: (purpose: string) => Promise<Channel>;
  /** The page's instance keeps every instance's beats here; without it this instance only beats. */
  fleet?: FleetHistory;
}

/**
 * This instance's heartbeat: every `intervalMs`, one message on the control exchange with its identity, its queues'
 * states and what they did since the previous beat; on the page's instance, a private queue takes the application's
 * beats into a FleetHistory. Best effort: a failure is a warning, tried again at the next beat.
 */
export class HeartbeatRuntime {
  private readonly identity: Heartbeat['instance'];
  private timer?: NodeJS.Timeout;
  private seq = 0;
  private readonly publisher = new SharedChannel<Channel>();
  private readonly listener = new SharedChannel<Channel>();
  private warned = false;
  /** When a bad heartbeat was last logged: at most one line a minute. */
  private lastIgnored = -Infinity;
  /** The broker users of the application's URLs: the only senders whose beats are kept. */
  private readonly users: readonly string[];
  /** On the page's instance: where every instance's beats are kept. */
  private fleet?: FleetHistory;

  constructor(private readonly deps: HeartbeatDeps) {
    this.fleet = deps.fleet;
    this.users = brokerUsers(deps.config.urls);
    const host = hostname().slice(0, 100);
    this.identity = {
      id: `${host}:${process.pid}:${randomBytes(4).toString('hex')}`,
      host,
      pid: process.pid,
      version: (process.env.npm_package_version ?? '').slice(0, 100),
      startedAt: Date.now(),
    };
  }

  /** Keeps every instance's beats in `fleet` from the next beat on (the page, imported beside an instance that beats). */
  watch(fleet: FleetHistory): void {
    this.fleet ??= fleet;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.beat(), this.deps.intervalMs);
    this.timer.unref();
    void this.beat();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    const channels = [this.publisher.take(), this.listener.take()];
    await Promise.all(channels.map((c) => c?.then((ch) => ch.close()).catch(() => undefined)));
  }

  /** Publishes one beat (and makes sure the listener runs); never throws. */
  async beat(): Promise<void> {
    try {
      if (this.fleet) await this.listen();
      const channel = await this.open(this.publisher, () => this.deps.publishing.channel('heartbeat', true));
      const beat: Heartbeat = {
        v: 1,
        application: this.deps.config.application ?? '-',
        instance: this.identity,
        seq: ++this.seq,
        sentAt: Date.now(),
        intervalMs: this.deps.intervalMs,
        queues: this.queues(),
      };
      channel.publish(CONTROL_EXCHANGE, heartbeatKey(this.deps.config.application), encodeHeartbeat(beat), {
        contentType: 'application/json',
        userId: this.deps.publishing.user,
        expiration: String(this.deps.intervalMs * 3),
      });
      this.warned = false;
    } catch (error) {
      if (!this.warned) this.deps.logger.warn(`Heartbeat not sent (tried again every ${this.deps.intervalMs} ms): ${errorMessage(error)}`);
      this.warned = true;
    }
  }

  /** This instance's queues for a beat: each consumed queue with its state and counts, and each partitioned handler. */
  private queues(): HeartbeatQueue[] {
    const { collector } = this.deps;
    const flows = new Map(this.deps.flows().map((f) => [f.queue, f]));
    const queues: HeartbeatQueue[] = this.deps.consumed().map(({ queue, consuming }) => {
      const flow = flows.get(queue);
      const nextTrialAt = flow?.openUntil ? Date.parse(flow.openUntil) : undefined;
      const breaker = flow && flow.circuit !== undefined && flow.circuit !== 'closed' ? collector.causeOf(queue, nextTrialAt) : undefined;
      return { queue, consuming, state: flow?.state ?? 'running', ...collector.drain(queue), ...(breaker && { breaker }) };
    });
    for (const handler of this.deps.partitions()) {
      const mine = handler.partitions.filter((p) => p.mine).map((p) => p.index);
      queues.push({ queue: handler.queue, consuming: mine.length > 0, state: 'running', partitions: mine, ...collector.drain(handler.queue) });
    }
    return queues.slice(0, MAX_HEARTBEAT_QUEUES);
  }

  /** The page's side: a private queue bound to the application's heartbeat key, consumed into the fleet. */
  private async listen(): Promise<void> {
    const fleet = this.fleet as FleetHistory;
    await this.open(this.listener, async () => {
      const channel = await this.deps.consumeChannel('heartbeats');
      await channel.assertExchange(CONTROL_EXCHANGE, 'direct', { durable: true });
      const { queue } = await channel.assertQueue('', {
        ...PRIVATE_QUEUE_OPTIONS,
        arguments: { ...PRIVATE_QUEUE_OPTIONS.arguments, 'x-max-length': LISTEN_QUEUE_LENGTH, 'x-message-ttl': this.deps.intervalMs * 3 },
      });
      await channel.bindQueue(queue, CONTROL_EXCHANGE, heartbeatKey(this.deps.config.application));
      await channel.consume(queue, (message) => message && this.take(fleet, message), { noAck: true });
      return channel;
    });
  }

  private take(fleet: FleetHistory, message: ConsumeMessage): void {
    const { userId } = message.properties;
    if (typeof userId !== 'string' || !this.users.includes(userId)) return; // not from this application's broker users
    const beat = decodeHeartbeat(message.content, message.fields.routingKey);
    if ('problem' in beat) {
      if (Date.now() - this.lastIgnored < 60_000) return;
      this.lastIgnored = Date.now();
      this.deps.logger.warn(`Ignored a heartbeat (at most one such line a minute): ${beat.problem}`);
      return;
    }
    fleet.accept(beat, Date.now(), beat.instance.id === this.identity.id);
  }

  /** The channel kept in `shared`, opened when missing or closed (it is forgotten when it closes). */
  private open(shared: SharedChannel<Channel>, make: () => Promise<Channel>): Promise<Channel> {
    return shared.get((forget) =>
      make().then((channel) => {
        channel.on('close', forget);
        channel.on('error', () => undefined);
        return channel;
      }),
    );
  }
}
