import { randomUUID } from 'node:crypto';
import type { ConsumeMessage } from 'amqplib';
import { AmqpConnection } from '../amqp/amqp.connection.js';
import { readBrokerUrls } from '../core/config/broker-urls.reader.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_RECONNECT } from '../core/config/module.config.js';
import { CONTROL_EXCHANGE, encodeControl, type ControlCommand } from '../core/breaker/control.message.js';
import { SILENT_LOGGER } from '../core/observe/retry.logger.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { startTimer } from '../core/time/duration.timer.js';
import type { QueueFlowStatus } from '../engine/queue-flow.control.js';

const REPLY_QUEUE = 'amq.rabbitmq.reply-to';
const CONNECTION_NAME = 'amqp-retry queue control';

/** One running instance's answer to a pause or resume. */
export interface ControlReply {
  /** The process that answered: host, pid and application name. */
  instance: string;
  /** Its queue's state after the command. */
  status?: QueueFlowStatus;
  /** Why it did not act (a malformed command, a queue it does not consume). */
  error?: string;
}

/** What a pause or resume reached: `routed` false when no running instance consumes the queue. */
export interface ControlOutcome {
  /** Whether the broker routed the command to at least one running instance. */
  routed: boolean;
  /** The answers that came within the wait, one per instance. */
  replies: ControlReply[];
}

/**
 * Pauses and resumes handler queues of running applications from another process (the `amqp-retry pause|resume`
 * CLI, or a deploy script): the command goes to every running instance that consumes the queue, through the control
 * exchange, and each answers with its state. The broker's permissions decide who may: writing to the exchange
 * `amqp-retry.control` is needed. A pause lasts as long as those processes do: an instance started later runs.
 */
export class QueueControl {
  private constructor(private readonly urls: readonly string[]) {}

  /**
   * `url`: one URL or a comma-separated list (the first node that answers); default AMQP_URL, else localhost (read
   * as ParkedMessages and the module read theirs). A bad URL is a RetryConfigError naming it, password masked.
   */
  static create(options: { url?: string } = {}): QueueControl {
    return new QueueControl(readBrokerUrls({ url: options.url }, process.env.AMQP_URL, 'QueueControl', true));
  }

  /** Pauses `queue` in every running instance that consumes it, saying who and why; listens `waitMs` for answers. */
  pause(queue: string, who: { by: string; reason?: string }, waitMs = 2_000): Promise<ControlOutcome> {
    return this.send({ command: 'pause', queue, by: who.by, ...(who.reason !== undefined && { reason: who.reason }) }, waitMs);
  }

  /** Resumes `queue` in every running instance that consumes it, saying who; listens `waitMs` for answers. */
  resume(queue: string, who: { by: string }, waitMs = 2_000): Promise<ControlOutcome> {
    return this.send({ command: 'resume', queue, by: who.by }, waitMs);
  }

  /**
   * Publishes the command (mandatory: an unrouted one comes back, so `routed` is false at once) and collects the
   * answers for `waitMs`: nothing says how many instances will answer (a paused one consumes nothing, yet answers),
   * and one busy or far away answers late, so the whole wait is given to them.
   */
  private async send(command: ControlCommand, waitMs: number): Promise<ControlOutcome> {
    const settings = { urls: this.urls, name: CONNECTION_NAME, reconnect: DEFAULT_RECONNECT, connectTimeoutMs: DEFAULT_CONNECT_TIMEOUT_MS };
    const connection = await AmqpConnection.open(settings, SILENT_LOGGER);
    try {
      const channel = await connection.createConfirmChannel();
      let closedBecause: string | undefined;
      channel.on('error', (error: Error) => (closedBecause = error.message));
      // Checked, not declared: an operator needs write permission on it only. Missing: no application ever listened.
      const exists = await channel.checkExchange(CONTROL_EXCHANGE).then(
        () => true,
        (error: unknown) => {
          if ((error as { code?: unknown }).code === 404) return false;
          throw new Error(closedBecause ?? errorMessage(error));
        },
      );
      if (!exists) return { routed: false, replies: [] };
      const correlationId = randomUUID();
      const replies: ControlReply[] = [];
      await channel.consume(
        REPLY_QUEUE,
        (message: ConsumeMessage | null) => {
          if (!message || message.properties.correlationId !== correlationId) return;
          replies.push(readReply(message.content));
        },
        { noAck: true },
      );
      let routed = true;
      channel.on('return', () => (routed = false));
      channel.publish(CONTROL_EXCHANGE, command.queue, encodeControl(command), {
        mandatory: true,
        replyTo: REPLY_QUEUE,
        correlationId,
        contentType: 'application/json',
        // Checked by the broker against this connection's user: the applications name it in their logs, and take
        // commands only with it (RetryModuleOptions.controlUsers).
        userId: connection.user,
      });
      // A refusal (403: this user may not write to the exchange) closes the channel: say why, not just "closed".
      await channel.waitForConfirms().catch((error: unknown) => {
        throw new Error(closedBecause ?? errorMessage(error));
      });
      if (closedBecause) throw new Error(closedBecause);
      if (routed) await new Promise<void>((resolve) => startTimer(waitMs, resolve));
      return { routed, replies };
    } finally {
      await connection.close().catch(() => undefined);
    }
  }
}

function readReply(content: Buffer): ControlReply {
  try {
    const body = JSON.parse(content.toString('utf8')) as Partial<ControlReply>;
    return {
      instance: typeof body.instance === 'string' ? body.instance : 'an instance',
      ...(body.status !== undefined && { status: body.status }),
      ...(typeof body.error === 'string' && { error: body.error }),
    };
  } catch {
    return { instance: 'an instance', error: 'an answer that is not JSON' };
  }
}
