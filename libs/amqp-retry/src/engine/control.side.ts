import { hostname } from 'node:os';
import type { Channel } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { closeWhenOpen, SharedChannel } from '../amqp/channel-close.settler.js';
import { CONTROL_EXCHANGE, encodeControl, type ControlCommand } from '../core/breaker/control.message.js';
import { readPauseBy } from '../core/breaker/queue.state.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { ControlListener } from './control.listener.js';
import { encodeHandOverNote, HAND_OVER_NOTE_TYPE, type HandOverNote } from '../core/delivery/hand-over.note.js';
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

/** Pause and resume: here, everywhere (told to the other instances through the control exchange), and from other processes. */
export class ControlSide {
  private listener?: ControlListener;
  /** One channel for the replies, opened again after it was lost with its connection. */
  private readonly replies = new SharedChannel<Channel>();
  /**
   * Whether this instance's listener declared CONTROL_EXCHANGE at its last start: the exchange then exists (durable),
   * also once the listener stopped (an application that stops hands its partitions over after that).
   */
  private hasExchange = false;
  /** Whether a hand-over went without its note because the exchange was not declared: told once. */
  private unannounced = false;

  constructor(private readonly deps: ControlSideDeps) {}

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
    if (this.listener) return this.listener.bind(queues);
    const { config, logger } = this.deps;
    const instance = `${hostname()} pid ${process.pid}${config.application ? ` (${config.application})` : ''}`;
    this.listener = new ControlListener({
      connection,
      logger,
      instance,
      users: brokerUsers(config.urls),
      controlUsers: config.controlUsers,
      act: (command, sender) =>
        command.command === 'pause' ? this.pause(command.queue, command, sender) : this.resume(command.queue, command, sender),
      reply: (replyTo, correlationId, body) => this.reply(replyTo, correlationId, body),
      handedOver: (note) => this.deps.handedOver(note),
      exchangeDeclared: (declared) => (this.hasExchange = declared),
    });
    await this.listener.start(queues);
  }

  /** After a reconnection: its queue died with the connection; warns if it cannot start again, and never rejects. */
  async restart(queues: readonly string[]): Promise<void> {
    await this.listener
      ?.start(queues)
      .catch((error: unknown) => this.deps.logger.warn(`Pause and resume from other processes are unavailable: ${errorMessage(error)}`));
  }

  async stop(): Promise<void> {
    const listener = this.listener;
    this.listener = undefined;
    await Promise.all([listener?.stop(), closeWhenOpen(this.replies.take())]);
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
}
