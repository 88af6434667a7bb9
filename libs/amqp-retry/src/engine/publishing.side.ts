import { openConnection, type AmqpConnection } from '../amqp/amqp.connection.js';
import { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import { declareTopology } from '../amqp/topology.declarer.js';
import { TopologyGuard } from '../amqp/topology.guard.js';
import { TargetProbe } from '../amqp/target.probe.js';
import { KnownTargets } from '../core/publish/known-targets.js';
import {
  assertLadderHeaders,
  delayLadderPrefix,
  isLadderTarget,
  ladderTargetProblem,
  ladderProperties,
  planDelayedPublish,
  planDelayTopology,
  type DelayTopology,
} from '../core/delivery/delay.plan.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { NotConnectedError } from '../errors/not-connected.error.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { Channel, Options } from 'amqplib';
import { checkPublishProperties, checkPublishRoute } from '../core/message/message.properties.js';
import { brokerUser } from '../core/config/broker-urls.reader.js';
import { isMissingTarget } from '../core/publish/publish.outcome.js';
import type { PublishKind } from '../core/observe/retry.observer.js';
import { copyOwn } from '../core/headers/own-keys.copy.js';
import { PublishError } from '../errors/publish.error.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { withinTime } from '../core/time/duration.timer.js';
import { replyTargetProblem } from '../core/publish/reply-address.rules.js';

/** One message to publish, as the application gives it. */
export interface Outgoing {
  exchange: string;
  routingKey: string;
  content: Buffer;
  properties: Options.Publish;
}

type DelayedPublishPlan = ReturnType<typeof planDelayedPublish>;

/**
 * How long a check of the whole delay ladder holds: the first delayed publish after that checks it again (passively,
 * one round trip a queue or exchange) before it goes, and declares again whatever was deleted. Inside the ladder a
 * level dead-letters without confirms: a message reaching a deleted level or exchange is dropped silently.
 */
export const LADDER_CHECK_EVERY_MS = 5_000;

/** How long a delayed publish's target, once found, goes unchecked (a missing one is checked at every publish). */
export const TARGET_CHECK_EVERY_MS = 5_000;
type LadderPlan = Extract<DelayedPublishPlan, { kind: 'ladder' }>;

/**
 * The publishing connection's confirm channels, one per purpose: `publisher` for the application's own publishes (a
 * publish to a missing exchange never disturbs parking), `parker` for parked copies and plan records, `forwarder` for
 * the delay forwarder (whose targets may have been deleted since the message was delayed), `relay` for the outbox relay
 * (a row the broker refuses never disturbs the application's publishes).
 */
export type Publishers = { connection: AmqpConnection } & Record<PublisherRole | 'parker' | 'forwarder', ConfirmPublisher>;

/** Sends a message on a channel of the caller's with the properties given (see PublishingSide.sendObserved). */
export type SendObserved = (properties: Options.Publish) => Promise<void>;

/** The confirm channels a publish of the engine may go on. */
export type PublisherRole = 'publisher' | 'relay';

/**
 * The publishing half of the engine: a connection of its own, so that a broker alarm that blocks publishers never
 * stops the consumers. Opens on first use; once closed, a publish fails instead of leaving a connection behind.
 */
export class PublishingSide {
  private opened?: Promise<Publishers>;
  /** The publishers once `opened` resolved: the usual publish takes them without awaiting a promise. */
  private openedNow?: Publishers;
  private ladder?: Promise<DelayTopology>;
  /** Declarations of the ladder begun: only the first explains a refused queue's type (see declareTopology). */
  private ladderDeclarations = 0;
  /** When a declaration or a check last found the whole ladder (0: never). */
  private ladderCheckedAt = 0;
  private ladderWarnedAt = 0;
  private ladderGuard?: TopologyGuard;
  private targetProbe?: TargetProbe;
  private readonly knownTargets = new KnownTargets(TARGET_CHECK_EVERY_MS);
  private closed = false;

  constructor(
    private readonly config: ModuleConfig,
    private readonly logger: RetryLogger,
    private readonly observers: ObserverHub,
  ) {}

  /**
   * Publishes `out` on the confirm channel of `via` and resolves once the broker confirmed it; with `delayMs` > 0
   * through the delay ladder. Not async: the usual publish hands amqplib's promise back as it is (one promise and a
   * microtask less a publish; a flood holds 100,000 of them). Errors still come as rejections.
   */
  publish(via: PublisherRole, out: Outgoing, delayMs: number): Promise<void> {
    let plan: DelayedPublishPlan;
    try {
      if (this.closed) throw new NotConnectedError('the application has shut down; publish before app.close()');
      const prefix = delayMs > 0 ? this.delayLadderPrefix() : undefined; // throws before publishing if delays are off
      plan = planDelayedPublish(delayMs, out, Date.now(), prefix);
      this.check(out.properties); // a bad one is a TypeError or RangeError here, not a failed send or a closed channel
      // A delayed one's target and CC and BCC keys wait in headers, where any length passes: checked before the ladder.
      checkPublishRoute(out.exchange, out.routingKey, plan.kind === 'ladder' ? out.properties : undefined);
      const target = replyTargetProblem(out.exchange, out.routingKey, plan.kind === 'ladder');
      if (target !== undefined) throw new RangeError(`Cannot publish to ${target}.`);
      if (plan.kind === 'ladder') {
        assertLadderHeaders(out.properties.headers);
        // The configured prefix: it covers the quorum ladder's names too.
        const configured = this.config.delayPrefix as string;
        if (isLadderTarget(out, configured)) throw new TypeError(`Cannot delay this message: ${ladderTargetProblem(out, configured)}.`);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    if (!this.observers.publishes) return this.send(via, plan, out);
    return this.publishObserved(via, plan, out, delayMs);
  }

  /** Checks a publish's properties (checkPublishProperties), a `userId` against the users of the broker URLs. */
  check(properties: Options.Publish): void {
    checkPublishProperties(properties, properties.userId == null ? undefined : this.config.urls.map(brokerUser));
  }

  /** The prefix of the delay ladder's names (with `.quorum` for a quorum ladder); throws when delayed delivery is off. */
  delayLadderPrefix(): string {
    if (this.config.delayPrefix === undefined) {
      throw new Error('Delayed delivery is off (RetryModule option delayedDelivery: false); publish without a delay, or turn it on');
    }
    return delayLadderPrefix(this.config.delayPrefix, this.config.delayQueueType);
  }

  /**
   * The broker user of the node the publishing connection is on (the first URL's before it opens): the only `userId` the
   * broker takes on its publishes, which after a failover to a URL with another user is that user.
   */
  get user(): string {
    return this.openedNow?.connection.user ?? brokerUser(this.config.urls[0]);
  }

  /** A plain channel on the publishing connection (see RetryEngine.publishingChannel); refused once closed. */
  async channel(purpose: string, expectClose = false): Promise<Channel> {
    const { connection } = await this.open();
    return connection.createChannel(purpose, expectClose);
  }

  /**
   * Sends an application's message on a channel of the caller's (`send` gets the properties to publish) as a publish of
   * the engine's is observed: the observers may add headers (a tracer's `traceparent`), and hear how it ended.
   */
  sendObserved(out: Omit<Outgoing, 'content'>, send: SendObserved): Promise<void> {
    if (!this.observers.publishes) return send(out.properties);
    return this.observed('publish', out, send);
  }

  private async publishObserved(via: PublisherRole, plan: DelayedPublishPlan, out: Outgoing, delayMs: number): Promise<void> {
    const { exchange, routingKey } = out;
    const kind: PublishKind = plan.kind === 'direct' ? 'publish' : 'delayed';
    await this.observed(kind, out, (properties) => this.send(via, plan, { exchange, routingKey, content: out.content, properties }));
    if (kind === 'delayed') this.observers.emit('delayedPublished', { exchange, routingKey, delayMs });
  }

  /** Runs `send` inside the observers' scope of a publish, with the headers they added; tells them how it ended. */
  private async observed(kind: PublishKind, out: Omit<Outgoing, 'content'>, send: SendObserved): Promise<void> {
    const { exchange, routingKey, properties } = out;
    const headers = copyOwn(properties.headers); // the caller's object is left as it was
    const scope = this.observers.publishing({ kind, exchange, routingKey, headers, messageId: properties.messageId });
    try {
      const sent: Options.Publish = copyOwn(properties); // not spreads: docs/performance.md
      sent.headers = headers;
      await (scope?.run ? scope.run(() => send(sent)) : send(sent));
    } catch (error) {
      scope?.end?.(error);
      this.observers.emit('publishRejected', { kind, exchange, routingKey, error });
      throw error;
    }
    scope?.end?.();
  }

  private send(via: PublisherRole, plan: DelayedPublishPlan, out: Outgoing): Promise<void> {
    // Once open, a direct publish goes straight to the channel: no await (and no suspended frame) of ours in between.
    const open = this.closed ? undefined : this.openedNow;
    if (open && plan.kind === 'direct') return open[via].publish(out.exchange, out.routingKey, out.content, out.properties);
    return this.sendWhenOpen(via, plan, out);
  }

  /**
   * A publish that waits before it goes (for the first connection, for the delay ladder): every wait, the publisher's
   * own included, ends at one deadline, publishTimeout from the call.
   */
  private async sendWhenOpen(via: PublisherRole, plan: DelayedPublishPlan, out: Outgoing): Promise<void> {
    const deadline = Date.now() + this.config.publishTimeoutMs;
    const publisher = (await this.open())[via];
    if (plan.kind === 'direct') return publisher.publish(out.exchange, out.routingKey, out.content, out.properties, undefined, deadline);
    const delayed = ladderProperties(out.properties, plan.headers);
    await this.ladderFor(publisher, plan, deadline);
    await this.targetExists(out, deadline);
    await this.checkLadder(deadline);
    try {
      await publisher.publish(plan.exchange, plan.routingKey, out.content, delayed, undefined, deadline);
    } catch (error) {
      if (!isMissingTarget(error)) throw error;
      // Part of the ladder was deleted: declare it again, and try once more.
      this.logger.error(`Part of the delay ladder "${this.delayLadderPrefix()}" is missing; declaring it again`);
      this.forgetLadder();
      await this.ladderFor(publisher, plan, deadline);
      await publisher.publish(plan.exchange, plan.routingKey, out.content, delayed, undefined, deadline);
    }
  }

  /**
   * The delay ladder for a delayed publish: while the connection is down (the ladder is declared again after every
   * reconnection) it first waits for it within the publish's deadline, as a publish without delay does, counted
   * against publishBufferSize; a connection lost during the declaration is waited for again. The wait for the
   * declaration too ends at the deadline: a broker that blocks the connection (a memory or disk alarm) answers no
   * `channel.open` until the alarm clears, and then the declaration goes on.
   */
  private async ladderFor(publisher: ConfirmPublisher, plan: LadderPlan, deadline: number): Promise<void> {
    for (;;) {
      const { connection } = await this.open();
      try {
        await publisher.whenConnected(deadline);
      } catch (error) {
        throw new PublishError(plan.exchange, plan.routingKey, errorMessage(error));
      }
      const declaring = this.delayLadder();
      try {
        await withinTime(declaring, Math.max(0, deadline - Date.now()), () => this.ladderTimeout(plan));
        return;
      } catch (error) {
        // A declaration that failed is forgotten (delayLadder), and so is one a reconnection overtook; one that only
        // outlived this publish's deadline is kept for the next publishes: declaring again meanwhile would leave one more
        // unanswered channel.open on the connection each time, for as long as the broker blocks it.
        if (connection.isConnected || Date.now() >= deadline) throw error;
      }
    }
  }

  /**
   * Rejects a delayed publish whose target is missing, as the broker rejects an immediate one: an exchange that does not
   * exist, or, through the default exchange, a queue that does not. Whether a queue is bound to a named exchange's key
   * is known only at due time (a due message no queue takes is parked). A target found is not checked again for
   * TARGET_CHECK_EVERY_MS; a check that cannot answer (the connection is down, the deadline passed) lets the publish go on.
   */
  private async targetExists(out: Outgoing, deadline: number): Promise<void> {
    const byName = out.exchange === '';
    const name = byName ? `queue ${out.routingKey}` : `exchange ${out.exchange}`;
    if (this.knownTargets.has(name, Date.now())) return;
    const { connection } = await this.open();
    const probe = (this.targetProbe ??= new TargetProbe(() => connection.createChannel('delayed publish target check', true)));
    const checking = byName ? probe.queueExists(out.routingKey) : probe.exchangeExists(out.exchange);
    const found = await withinTime(checking, Math.max(0, deadline - Date.now()), () => new Error('timed out')).catch(() => undefined);
    if (found === undefined) return;
    if (found) return this.knownTargets.found(name, Date.now());
    const reason = byName
      ? `no queue "${out.routingKey}" for the default exchange to deliver the delayed message to (checked before delaying it)`
      : `no exchange "${out.exchange}" (checked before delaying the message)`;
    throw new PublishError(out.exchange, out.routingKey, reason, 404);
  }

  /**
   * Checks the whole ladder before a delayed publish goes into it once the last declaration or check is
   * LADDER_CHECK_EVERY_MS old, declaring again what was deleted (a log line says what); publishes meanwhile wait for
   * the same check. A check that fails or outlives the publish's deadline lets the publish go on: it is tried again by
   * the next one. Also run, without waiting, by the forwarder as due messages arrive (checkLadderSoon).
   */
  async checkLadder(deadline = Date.now() + this.config.publishTimeoutMs): Promise<void> {
    if (Date.now() - this.ladderCheckedAt < LADDER_CHECK_EVERY_MS) return;
    const started = Date.now();
    try {
      // The ladder's declaration (a check found a part deleted, or a reconnection forgot it) waits within the deadline too.
      const checked = await withinTime(
        this.guardLadder(),
        Math.max(0, deadline - started),
        () => new Error(`no answer within ${this.config.publishTimeoutMs} ms`),
      );
      if (checked) this.ladderCheckedAt = Math.max(this.ladderCheckedAt, started);
    } catch (error) {
      if (started - this.ladderWarnedAt < LADDER_CHECK_EVERY_MS) return; // one line at most per interval
      this.ladderWarnedAt = started;
      this.logger.warn(
        `Could not check the delay ladder "${this.config.delayPrefix}" (${errorMessage(error)}); checking it again with the next delayed publish`,
      );
    }
  }

  /** The ladder checked (declared again where a part is missing); false when delayed delivery is off. */
  private async guardLadder(): Promise<boolean> {
    const ladder = await this.delayLadder();
    if (!ladder) return false;
    const { connection } = await this.open();
    this.ladderGuard ??= new TopologyGuard(
      connection,
      { exchanges: ladder.exchanges.map((e) => e.name), queues: ladder.queues.map((q) => q.name) },
      () => (this.forgetLadder(), this.delayLadder()),
      this.logger,
      `Delay ladder "${ladder.prefix}"`,
      'the delay ladder',
    );
    await this.ladderGuard.ensure();
    return true;
  }

  /** Checks the ladder (checkLadder) without waiting, when the last check is old: for the forwarder, on each due message. */
  checkLadderSoon(): void {
    if (this.closed || Date.now() - this.ladderCheckedAt < LADDER_CHECK_EVERY_MS) return;
    void this.checkLadder().catch(() => undefined);
  }

  private ladderTimeout(plan: LadderPlan): PublishError {
    const reason = `the delay ladder could not be declared within ${this.config.publishTimeoutMs} ms (publishTimeout; is the broker blocking publishers over a memory or disk alarm?)`;
    return new PublishError(plan.exchange, plan.routingKey, reason);
  }

  /** Whether the publishing connection is up; undefined before it first opened. */
  get isConnected(): boolean | undefined {
    return this.connection?.isConnected;
  }

  private connection?: AmqpConnection;

  open(): Promise<Publishers> {
    if (this.closed) return Promise.reject(new NotConnectedError('the application has shut down'));
    const opening = (this.opened ??= (async () => {
      const { publishTimeoutMs, publishBufferSize, confirmTimeoutMs } = this.config;
      const connection = await openConnection(this.config, 'publish', this.logger, this.observers);
      this.connection = connection;
      connection.onReconnect(async () => this.forgetLadder()); // the broker may have lost it
      const limits = { timeoutMs: publishTimeoutMs, bufferSize: publishBufferSize, confirmTimeoutMs };
      const publisher = () => new ConfirmPublisher(connection, limits);
      const opened: Publishers = { connection, publisher: publisher(), parker: publisher(), forwarder: publisher(), relay: publisher() };
      if (this.closed)
        await PublishingSide.shut(opened); // closed while connecting
      else this.openedNow = opened;
      return opened;
    })());
    opening.catch(() => this.opened === opening && (this.opened = undefined)); // a failed connect can be tried again
    return opening;
  }

  /** The delay ladder, declared once per connection and when a publish found part of it deleted; undefined when off. */
  delayLadder(): Promise<DelayTopology | undefined> {
    const prefix = this.config.delayPrefix;
    if (prefix === undefined) return Promise.resolve(undefined);
    if (this.ladder) return this.ladder;
    const declaring = this.open().then(async ({ connection }) => {
      const ladder = planDelayTopology(prefix, this.config.delayQueueType);
      const started = Date.now();
      await declareTopology(connection, ladder, this.ladderDeclarations++ === 0);
      this.ladderCheckedAt = Math.max(this.ladderCheckedAt, started); // all of it exists: a check of its own
      return ladder;
    });
    this.ladder = declaring;
    declaring.catch(() => this.forgetLadder(declaring));
    return declaring;
  }

  /** Declares the ladder again on next use (all of it: declarations are idempotent). */
  forgetLadder(which?: Promise<DelayTopology | undefined>): void {
    if (which === undefined || this.ladder === which) this.ladder = undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    const opened = this.opened;
    this.opened = undefined;
    this.openedNow = undefined;
    this.ladder = undefined;
    const o = await opened?.catch(() => undefined);
    if (o) await PublishingSide.shut(o);
  }

  private static async shut(o: Publishers): Promise<void> {
    await Promise.all([o.publisher.close(), o.parker.close(), o.forwarder.close(), o.relay.close()]);
    await o.connection.close();
  }
}
