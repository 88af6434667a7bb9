import { hostname } from 'node:os';
import type { Channel, ConsumeMessage } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { closeWhenOpen, SharedChannel } from '../amqp/channel-close.settler.js';
import { CONTROL_EXCHANGE, decodeControl, encodeControl, type ControlCommand } from '../core/breaker/control.message.js';
import { readPauseBy } from '../core/breaker/queue.state.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { decodeHandOverNote, encodeHandOverNote, HAND_OVER_NOTE_TYPE, type HandOverNote } from '../core/delivery/hand-over.note.js';
import { PRIVATE_QUEUE_OPTIONS } from '../core/topology/queue-type.mismatch.js';
import type { PublishingSide } from './publishing.side.js';
import type { ReplyAddressChecker } from './reply-address.checker.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import { brokerUsers } from '../core/config/broker-urls.reader.js';
import type { QueueFlowControl, QueueFlowStatus } from './queue-flow.control.js';

/** What the control side needs of the rest of the engine. */
export interface ControlSideDeps {
  config: Pick<ModuleConfig, 'application' | 'urls' | 'controlUsers'>;
  logger: RetryLogger;
  /** Publishes notes and commands, replies on its channels, as the user of the publishing connection (`userId`, for the broker to check). */
  publishing: Pick<PublishingSide, 'publish' | 'channel' | 'user'>;
  replyAddresses: Pick<ReplyAddressChecker, 'state'>;
  /** A handler queue's flow; throws a RangeError that names the queue's handlers when there is none to pause. */
  flowOf: (queue: string) => QueueFlowControl;
  /** Takes another instance's note of a hand-over of one of this engine's queues (ignored for any other queue). */
  handedOver: (note: HandOverNote) => void;
}

/** At most one line a minute for each kind of ignored control message. */
const IGNORED_LOG_MS = 60_000;

/**
 * Pause and resume: here, everywhere (told to the other instances through the control exchange), and from other
 * processes (`amqp-retry pause --queue Q`), taken on an exclusive queue bound to CONTROL_EXCHANGE with each handler
 * queue's name: every instance that consumes Q acts and answers with its state. Unavailable (the user may not declare
 * the exchange, say) is a warning, never a failed start.
 */
export class ControlSide {
  /** The consuming connection its listener runs on, from listen() to stop(). */
  private connection?: AmqpConnection;
  private channel?: Channel;
  private controlQueue?: string;
  private bound = new Set<string>();
  private stopped = false;
  /** The start under way: two quick recoveries take turns, so that one channel and one queue are left, not two. */
  private starting: Promise<void> = Promise.resolve();
  /** When each kind of ignored message was last logged: a flood of them writes one line a minute each. */
  private readonly lastIgnored = new Map<'unverified' | 'user' | 'malformed' | 'note', number>();
  /** The broker users of the application's URLs (its senders set one as `userId`, which the broker checks): notes come from them only. */
  private readonly users: readonly string[];
  /** One channel for the replies, opened again after it was lost with its connection. */
  private readonly replies = new SharedChannel<Channel>();
  /**
   * Whether this instance's listener declared CONTROL_EXCHANGE at its last start: the exchange then exists (durable),
   * also once the listener stopped (an application that stops hands its partitions over after that).
   */
  private hasExchange = false;
  /** Whether a hand-over went without its note because the exchange was not declared: told once. */
  private unannounced = false;

  constructor(private readonly deps: ControlSideDeps) {
    this.users = brokerUsers(deps.config.urls);
  }

  /** Pauses a handler queue in this process (see RetryEngine.pause); `sender`: the broker user of a command that asked. */
  pause(queue: string, who: { by: string; reason?: string }, sender?: string): QueueFlowStatus {
    const read = readPauseBy(who?.by, who?.reason);
    if ('problem' in read) throw new RangeError(`Cannot pause "${queue}": ${read.problem}; say who pauses, e.g. { by: 'alice', reason: 'INC-142' }`);
    return this.deps.flowOf(queue).pause(read.by, read.reason, sender);
  }

  /** Ends a pause in this process. */
  resume(queue: string, who: { by: string }, sender?: string): QueueFlowStatus {
    const read = readPauseBy(who?.by, undefined);
    if ('problem' in read) throw new RangeError(`Cannot resume "${queue}": ${read.problem}; say who resumes, e.g. { by: 'alice' }`);
    return this.deps.flowOf(queue).resume(read.by, sender);
  }

  /** Pauses here, then tells the other instances, best effort (see RetryEngine.pauseEverywhere). */
  async pauseEverywhere(queue: string, who: { by: string; reason?: string }): Promise<QueueFlowStatus> {
    const status = this.pause(queue, who);
    const { by, reason } = status.paused ?? who;
    await this.tellOthers({ command: 'pause', queue, by, ...(reason !== undefined && { reason }) });
    return status;
  }

  /** Resumes here and in the other instances. */
  async resumeEverywhere(queue: string, who: { by: string }): Promise<QueueFlowStatus> {
    const status = this.resume(queue, who);
    await this.tellOthers({ command: 'resume', queue, by: who.by.trim() });
    return status;
  }

  /** Starts taking commands for `queues` (once; later calls bind more queues), on the consuming connection. */
  async listen(connection: AmqpConnection, queues: readonly string[]): Promise<void> {
    if (this.connection) return this.bind(queues);
    this.connection = connection;
    this.stopped = false;
    await this.start(queues);
  }

  /** After a reconnection: its queue died with the connection; warns if it cannot start again, and never rejects. */
  async restart(queues: readonly string[]): Promise<void> {
    if (this.connection) await this.start(queues);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.connection = undefined;
    const channel = this.channel;
    this.channel = undefined;
    await Promise.all([channel?.close().catch(() => undefined), closeWhenOpen(this.replies.take())]);
  }

  /**
   * Tells every instance that consumes `note.queue` of a hand-over's returns on purpose, before the channel that makes
   * them closes: the next owner reads the note before it decides on those deliveries. Rejects when it cannot be sent.
   */
  announceReturns(note: HandOverNote): Promise<void> {
    // Only once this instance's listener declared the exchange: a publish to an exchange that does not exist closes
    // the application's publisher channel, whose other unconfirmed publishes would then be sent again.
    if (!this.hasExchange) {
      if (!this.unannounced) {
        this.unannounced = true;
        this.deps.logger.warn(
          `"${note.queue}" was handed over without a note of its returns on purpose: this instance could not declare ${CONTROL_EXCHANGE}, so the next owner counts them as crashes`,
        );
      }
      return Promise.resolve();
    }
    const properties = { contentType: 'application/json', type: HAND_OVER_NOTE_TYPE, userId: this.deps.publishing.user };
    return this.deps.publishing.publish(
      'publisher',
      { exchange: CONTROL_EXCHANGE, routingKey: note.queue, content: encodeHandOverNote(note), properties },
      0,
    );
  }

  private async tellOthers(command: ControlCommand): Promise<void> {
    // Validated by pause()/resume() already; this instance's own listener gets it too, and changes nothing more.
    const out = {
      exchange: CONTROL_EXCHANGE,
      routingKey: command.queue,
      content: encodeControl(command),
      properties: { contentType: 'application/json', userId: this.deps.publishing.user },
    };
    await this.deps.publishing
      .publish('publisher', out, 0)
      .catch((error: unknown) =>
        this.deps.logger.warn(`"${command.queue}" was ${command.command}d here, but the other instances could not be told: ${errorMessage(error)}`),
      );
  }

  private async reply(replyTo: string, correlationId: string | undefined, body: Buffer): Promise<void> {
    // Only to an address the broker says has its sender: a forged one must not close the publishing connection.
    const state = await this.deps.replyAddresses.state(replyTo);
    if (state.kind !== 'exists') {
      throw new Error(`its reply address ${state.kind === 'gone' ? 'no longer exists' : `cannot be used: ${state.reason}`}`);
    }
    const channel = await this.replies.get((forget) =>
      this.deps.publishing.channel('control replies', true).then((c) => {
        c.on('close', forget);
        return c;
      }),
    );
    channel.publish('', replyTo, body, { correlationId, contentType: 'application/json' });
  }

  /** Declares, binds `queues` and consumes; again after a reconnection (the old channel died with the connection). */
  private start(queues: readonly string[]): Promise<void> {
    const run = this.starting.then(() => this.startOnce(queues));
    this.starting = run;
    return run;
  }

  private async startOnce(queues: readonly string[]): Promise<void> {
    const { connection } = this;
    if (this.stopped || !connection || queues.length === 0) return;
    const { logger } = this.deps;
    this.bound = new Set();
    // a recovery that failed elsewhere runs this again on a live connection: the previous channel must not stay open
    const previous = this.channel;
    this.channel = undefined;
    await previous?.close().catch(() => undefined);
    try {
      const channel = await connection.createChannel('control commands', true);
      channel.on('error', (error: Error) => logger.warn(`Pause and resume from other processes are unavailable: ${error.message}`));
      // stop() came while it opened, or stop() and a listen() on another connection
      if (this.stopped || this.connection !== connection) return void (await channel.close().catch(() => undefined));
      this.channel = channel;
      await channel.assertExchange(CONTROL_EXCHANGE, 'direct', { durable: true }).then(
        () => (this.hasExchange = true),
        (error: unknown) => {
          this.hasExchange = false;
          throw error;
        },
      );
      const { queue } = await channel.assertQueue('', { ...PRIVATE_QUEUE_OPTIONS });
      this.controlQueue = queue;
      await this.bind(queues);
      await channel.consume(queue, (message) => message && this.handle(message), { noAck: true });
    } catch (error) {
      logger.warn(`Pause and resume from other processes (amqp-retry pause) are unavailable: ${errorMessage(error)}`);
    }
  }

  /** Binds more handler queues (attached after the start). */
  private async bind(queues: readonly string[]): Promise<void> {
    const { channel, controlQueue } = this;
    if (!channel || !controlQueue) return;
    for (const queue of queues) {
      if (this.bound.has(queue)) continue;
      await channel.bindQueue(controlQueue, CONTROL_EXCHANGE, queue);
      this.bound.add(queue);
    }
  }

  /** A hand-over's note: what another instance's channel put back on purpose in the queue `routingKey`. */
  private handleNote(content: Buffer, routingKey: string, sender: string): void {
    const from = `for "${JSON.stringify(routingKey).slice(1, -1)}" from broker user "${sender}"`;
    if (!this.users.includes(sender)) {
      return this.ignored('note', `Ignored a hand-over note ${from}: only this application's instances, as ${this.ownUsers()}, send them`);
    }
    const note = decodeHandOverNote(content, routingKey);
    if ('problem' in note) return this.ignored('note', `Ignored a hand-over note ${from}: ${note.problem}`);
    try {
      this.deps.handedOver(note);
    } catch (error) {
      this.deps.logger.warn(`Could not take a hand-over note ${from}: ${errorMessage(error)}`);
    }
  }

  /** The application's users, quoted, for a log line. */
  private ownUsers(): string {
    return this.users.map((user) => `"${user}"`).join(', ');
  }

  /** Logs why a message was ignored, at most once a minute for each `kind`. */
  private ignored(kind: 'unverified' | 'user' | 'malformed' | 'note', line: string): void {
    const now = Date.now();
    if (now - (this.lastIgnored.get(kind) ?? Number.NEGATIVE_INFINITY) < IGNORED_LOG_MS) return;
    this.lastIgnored.set(kind, now);
    this.deps.logger.warn(`${line} (at most one such line a minute)`);
  }

  /** Why a command from `sender` (its broker-validated userId, if any) is not taken, or undefined when it is. */
  private refusal(sender: unknown, queue: string): { kind: 'unverified' | 'user'; line: string; answer: string } | undefined {
    const { users } = this;
    const { controlUsers } = this.deps.config;
    if (typeof sender !== 'string' || sender === '') {
      const answer = `ignored: sent without userId, which the broker checks against the sender's connection; send it with the CLI or QueueControl of this application's version of amqp-retry, which set it`;
      return { kind: 'unverified', line: `Ignored a control message for "${queue}" without a broker-validated user: ${answer.slice(9)}`, answer };
    }
    if (users.includes(sender) || controlUsers === undefined || controlUsers.includes(sender)) return undefined;
    const answer = `ignored: broker user "${sender}" is neither this application's (${this.ownUsers()}) nor in RetryModule option "controlUsers"; add it there to let it pause and resume`;
    return { kind: 'user', line: `Ignored a control message for "${queue}" from broker user "${sender}": ${answer.slice(9)}`, answer };
  }

  private handle(message: ConsumeMessage): void {
    const { routingKey } = message.fields;
    const queue = JSON.stringify(routingKey).slice(1, -1);
    // Set only as the sender's own connection user: the broker refuses a publish whose userId is any other.
    const sender: unknown = message.properties.userId;
    const refused = this.refusal(sender, queue);
    if (message.properties.type === HAND_OVER_NOTE_TYPE) {
      if (refused?.kind === 'unverified')
        return this.ignored('note', `Ignored a hand-over note for "${queue}" without a broker-validated user (userId)`);
      return this.handleNote(message.content, routingKey, sender as string);
    }
    const { application } = this.deps.config;
    const instance = `${hostname()} pid ${process.pid}${application ? ` (${application})` : ''}`;
    let answer: Record<string, unknown>;
    const command = refused ? undefined : decodeControl(message.content, routingKey);
    if (refused) {
      this.ignored(refused.kind, refused.line);
      answer = { instance, error: refused.answer };
    } else if (command && 'problem' in command) {
      this.ignored('malformed', `Ignored a control message for "${queue}" from broker user "${sender as string}": ${command.problem}`);
      answer = { instance, error: command.problem };
    } else {
      try {
        answer = { instance, status: this.act(command as ControlCommand, sender as string) };
      } catch (error) {
        answer = { instance, error: errorMessage(error) };
      }
    }
    const { replyTo, correlationId } = message.properties;
    // only to a direct reply-to address (the CLI's): a sender must not make the application publish into its queues
    if (typeof replyTo !== 'string' || !replyTo.startsWith('amq.rabbitmq.reply-to')) return;
    this.reply(replyTo, typeof correlationId === 'string' ? correlationId : undefined, Buffer.from(JSON.stringify(answer))).catch((error: unknown) =>
      this.deps.logger.warn(`Could not answer a control message: ${errorMessage(error)}`),
    );
  }

  /** Carries out a command sent as broker user `sender`; throws for a queue this application does not consume. */
  private act(command: ControlCommand, sender: string): QueueFlowStatus {
    return command.command === 'pause' ? this.pause(command.queue, command, sender) : this.resume(command.queue, command, sender);
  }
}
