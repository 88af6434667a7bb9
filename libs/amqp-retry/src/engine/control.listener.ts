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
  /**
   * Carries out a command (RetryEngine.pause/resume) sent as broker user `sender`; throws for a queue this application
   * does not consume.
   */
  act: (command: ControlCommand, sender: string) => QueueFlowStatus;
  /** Answers the sender (its direct reply-to address), on the publishing connection. */
  reply: (replyTo: string, correlationId: string | undefined, body: Buffer) => Promise<void>;
  logger: RetryLogger;
  /** This process, as named in replies: host, pid and the application's name. */
  instance: string;
  /** Told whether a start declared CONTROL_EXCHANGE (it exists) or was refused it. */
  exchangeDeclared?: (declared: boolean) => void;
  /** Takes another instance's note of a hand-over (hand-over.note.ts); it is not answered. */
  handedOver?: (note: HandOverNote) => void;
  /** The application's broker users (its senders set one as `userId`, which the broker checks): notes come from them only. */
  users: readonly string[];
  /** The other broker users whose commands it takes (RetryModuleOptions.controlUsers); undefined: any. */
  controlUsers?: readonly string[];
}

/** At most one line a minute for each kind of ignored control message. */
const IGNORED_LOG_MS = 60_000;

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
  /** When each kind of ignored message was last logged: a flood of them writes one line a minute each. */
  private readonly lastIgnored = new Map<'unverified' | 'user' | 'malformed' | 'note', number>();

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
  private handleNote(content: Buffer, routingKey: string, sender: string): void {
    const from = `for "${JSON.stringify(routingKey).slice(1, -1)}" from broker user "${sender}"`;
    if (!this.deps.users.includes(sender)) {
      return this.ignored('note', `Ignored a hand-over note ${from}: only this application's instances, as ${this.ownUsers()}, send them`);
    }
    const note = decodeHandOverNote(content, routingKey);
    if ('problem' in note) return this.ignored('note', `Ignored a hand-over note ${from}: ${note.problem}`);
    try {
      this.deps.handedOver?.(note);
    } catch (error) {
      this.deps.logger.warn(`Could not take a hand-over note ${from}: ${errorMessage(error)}`);
    }
  }

  /** The application's users, quoted, for a log line. */
  private ownUsers(): string {
    return this.deps.users.map((user) => `"${user}"`).join(', ');
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
    const { users, controlUsers } = this.deps;
    if (typeof sender !== 'string' || sender === '') {
      const answer = `ignored: sent without userId, which the broker checks against the sender's connection; send it with the CLI or QueueControl of this application's version of amqp-retry, which set it`;
      return { kind: 'unverified', line: `Ignored a control message for "${queue}" without a broker-validated user: ${answer.slice(9)}`, answer };
    }
    if (users.includes(sender) || controlUsers === undefined || controlUsers.includes(sender)) return undefined;
    const answer = `ignored: broker user "${sender}" is neither this application's (${this.ownUsers()}) nor in RetryModule option "controlUsers"; add it there to let it pause and resume`;
    return { kind: 'user', line: `Ignored a control message for "${queue}" from broker user "${sender}": ${answer.slice(9)}`, answer };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const channel = this.channel;
    this.channel = undefined;
    await channel?.close().catch(() => undefined);
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
    let answer: Record<string, unknown>;
    const command = refused ? undefined : decodeControl(message.content, routingKey);
    if (refused) {
      this.ignored(refused.kind, refused.line);
      answer = { instance: this.deps.instance, error: refused.answer };
    } else if (command && 'problem' in command) {
      this.ignored('malformed', `Ignored a control message for "${queue}" from broker user "${sender as string}": ${command.problem}`);
      answer = { instance: this.deps.instance, error: command.problem };
    } else {
      try {
        answer = { instance: this.deps.instance, status: this.deps.act(command as ControlCommand, sender as string) };
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
