import type { Channel, ConsumeMessage } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { CONTROL_EXCHANGE, decodeControl, type ControlCommand } from '../core/breaker/control.message.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { decodeHandOverNote, HAND_OVER_NOTE_TYPE, type HandOverNote } from '../core/delivery/hand-over.note.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { QueueFlowStatus } from './queue-flow.control.js';
import { PRIVATE_QUEUE_OPTIONS } from '../core/topology/queue-type.mismatch.js';

interface ControlDeps {
  connection: AmqpConnection;
  /** Carries out a command (RetryEngine.pause/resume); throws for a queue this application does not consume. */
  act: (command: ControlCommand) => QueueFlowStatus;
  /** Answers the sender (its direct reply-to address), on the publishing connection. */
  reply: (replyTo: string, correlationId: string | undefined, body: Buffer) => Promise<void>;
  logger: RetryLogger;
  /** This process, as named in replies: host, pid and the application's name. */
  instance: string;
  /** Told whether a start declared CONTROL_EXCHANGE (it exists) or was refused it. */
  exchangeDeclared?: (declared: boolean) => void;
  /** Takes another instance's note of a hand-over (hand-over.note.ts); it is not answered. */
  handedOver?: (note: HandOverNote) => void;
}

/**
 * Takes pause and resume commands from other processes (`amqp-retry pause --queue Q`) on an exclusive queue bound to
 * CONTROL_EXCHANGE with each handler queue's name: every instance that consumes Q acts and answers with its state.
 * Unavailable (the user may not declare the exchange, say) is a warning, never a failed start.
 */
export class ControlListener {
  private channel?: Channel;
  private controlQueue?: string;
  private bound = new Set<string>();
  private stopped = false;
  /** The start under way: two quick recoveries take turns, so that one channel and one queue are left, not two. */
  private starting: Promise<void> = Promise.resolve();

  constructor(private readonly deps: ControlDeps) {}

  /** Declares, binds `queues` and consumes; again after a reconnection (the old channel died with the connection). */
  start(queues: readonly string[]): Promise<void> {
    const run = this.starting.then(() => this.startOnce(queues));
    this.starting = run;
    return run;
  }

  private async startOnce(queues: readonly string[]): Promise<void> {
    if (this.stopped || queues.length === 0) return;
    const { connection, logger } = this.deps;
    this.bound = new Set();
    // a recovery that failed elsewhere runs this again on a live connection: the previous channel must not stay open
    const previous = this.channel;
    this.channel = undefined;
    await previous?.close().catch(() => undefined);
    try {
      const channel = await connection.createChannel('control commands', true);
      channel.on('error', (error: Error) => logger.warn(`Pause and resume from other processes are unavailable: ${error.message}`));
      if (this.stopped) return void (await channel.close().catch(() => undefined)); // stop() came while it opened
      this.channel = channel;
      await channel.assertExchange(CONTROL_EXCHANGE, 'direct', { durable: true }).then(
        () => this.deps.exchangeDeclared?.(true),
        (error: unknown) => {
          this.deps.exchangeDeclared?.(false);
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
  async bind(queues: readonly string[]): Promise<void> {
    const { channel, controlQueue } = this;
    if (!channel || !controlQueue) return;
    for (const queue of queues) {
      if (this.bound.has(queue)) continue;
      await channel.bindQueue(controlQueue, CONTROL_EXCHANGE, queue);
      this.bound.add(queue);
    }
  }

  /** A hand-over's note: what another instance's channel put back on purpose in the queue `routingKey`. */
  private handleNote(content: Buffer, routingKey: string): void {
    const note = decodeHandOverNote(content, routingKey);
    if ('problem' in note) {
      return this.deps.logger.warn(`Ignored a hand-over note for "${JSON.stringify(routingKey).slice(1, -1)}": ${note.problem}`);
    }
    try {
      this.deps.handedOver?.(note);
    } catch (error) {
      this.deps.logger.warn(`Could not take a hand-over note for "${note.queue}": ${errorMessage(error)}`);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const channel = this.channel;
    this.channel = undefined;
    await channel?.close().catch(() => undefined);
  }

  private handle(message: ConsumeMessage): void {
    const { routingKey } = message.fields;
    if (message.properties.type === HAND_OVER_NOTE_TYPE) return this.handleNote(message.content, routingKey);
    const command = decodeControl(message.content, routingKey);
    let answer: Record<string, unknown>;
    if ('problem' in command) {
      this.deps.logger.warn(`Ignored a control message for "${JSON.stringify(routingKey).slice(1, -1)}": ${command.problem}`);
      answer = { instance: this.deps.instance, error: command.problem };
    } else {
      try {
        answer = { instance: this.deps.instance, status: this.deps.act(command) };
      } catch (error) {
        answer = { instance: this.deps.instance, error: errorMessage(error) };
      }
    }
    const { replyTo, correlationId } = message.properties;
    // only to a direct reply-to address (the CLI's): a sender must not make the application publish into its queues
    if (typeof replyTo !== 'string' || !replyTo.startsWith('amq.rabbitmq.reply-to')) return;
    this.deps
      .reply(replyTo, typeof correlationId === 'string' ? correlationId : undefined, Buffer.from(JSON.stringify(answer)))
      .catch((error: unknown) => this.deps.logger.warn(`Could not answer a control message: ${errorMessage(error)}`));
  }
}
