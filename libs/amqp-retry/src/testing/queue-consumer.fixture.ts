import { EventEmitter } from 'node:events';
import type { ConsumeMessage } from 'amqplib';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { type DeliveryHandler, QueueConsumer, type QueueConsumerOptions, type Settle } from '../amqp/queue.consumer.js';

/** A channel that records what is done on it, in one log shared by the channels of a test. */
export class FakeChannel extends EventEmitter {
  private readonly consumers = new Map<string, (message: ConsumeMessage | null) => void>();
  private nextTag = 0;

  constructor(
    readonly id: number,
    private readonly log: string[],
    private readonly queueGone: () => boolean,
  ) {
    super();
  }

  private note(line: string): void {
    this.log.push(`#${this.id} ${line}`);
  }

  prefetch(count: number): Promise<void> {
    this.note(`prefetch ${count}`);
    return Promise.resolve();
  }

  consume(_queue: string, onMessage: (message: ConsumeMessage | null) => void): Promise<{ consumerTag: string }> {
    const consumerTag = `c${++this.nextTag}`;
    this.consumers.set(consumerTag, onMessage);
    this.note(`consume ${consumerTag}`);
    return Promise.resolve({ consumerTag });
  }

  cancel(tag: string): Promise<void> {
    this.consumers.delete(tag);
    this.note(`cancel ${tag}`);
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.note('close');
    this.emit('close');
    return Promise.resolve();
  }

  ack(message: ConsumeMessage, multiple = false): void {
    this.note(`ack ${message.fields.deliveryTag}${multiple ? '+' : ''}`);
  }

  nack(message: ConsumeMessage, _allUpTo: boolean, requeue: boolean): void {
    this.note(`nack ${message.fields.deliveryTag}${requeue ? ' requeue' : ''}`);
  }

  checkQueue(): Promise<void> {
    return this.queueGone() ? Promise.reject(Object.assign(new Error('NOT_FOUND'), { code: 404 })) : Promise.resolve();
  }

  /** The broker delivers to the consumer subscribed last. */
  deliver(tag: number, suspect = false): void {
    const onMessage = [...this.consumers.values()].at(-1);
    if (!onMessage) throw new Error(`channel #${this.id} has no consumer`);
    onMessage({
      content: Buffer.from(`m${tag}`),
      fields: { deliveryTag: tag, redelivered: suspect },
      properties: { headers: {} },
    } as unknown as ConsumeMessage);
  }

  /** The broker cancels the consumer (basic.cancel from the server). */
  brokerCancel(): void {
    for (const onMessage of this.consumers.values()) onMessage(null);
  }

  /** The broker closes the channel alone, with a reason. */
  brokerClose(reason: string): void {
    this.emit('error', new Error(reason));
    this.emit('close');
  }
}

/** One handler call the test settles by hand. */
export interface Call {
  tag: number;
  message: ConsumeMessage;
  settle: Settle;
  signal: AbortSignal;
  done: () => void;
  fail: (error: unknown) => void;
}

/** Lets the promise callbacks and immediates of a few event-loop turns run. */
export const turns = async (count = 5): Promise<void> => {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** A QueueConsumer of queue "orders" on fake channels: what is done on them goes to `log`, each handler call to `calls`. */
export function setUp(overrides: Partial<QueueConsumerOptions> = {}) {
  const log: string[] = [];
  const lines: string[] = [];
  const events: string[] = [];
  const channels: FakeChannel[] = [];
  const calls: Call[] = [];
  let queueGone = false;
  let channelGate: Promise<void> | undefined;
  const connection = {
    isConnected: true,
    async createChannel(purpose: string): Promise<FakeChannel> {
      await channelGate;
      const channel = new FakeChannel(channels.length + 1, log, () => queueGone);
      channels.push(channel);
      if (!purpose.endsWith('check')) log.push(`#${channel.id} open`);
      return channel;
    },
  } as unknown as AmqpConnection;
  const observers = {
    active: true,
    emit: (name: string, event: { reason?: string }) => events.push(event.reason ? `${name}: ${event.reason}` : name),
  } as unknown as ObserverHub;
  const logger = {
    log: (line: string) => lines.push(`log ${line}`),
    warn: (line: string) => lines.push(`warn ${line}`),
    error: (line: string) => lines.push(`error ${line}`),
    debug: (line: string) => lines.push(`debug ${line}`),
  };
  const handle: DeliveryHandler = (message, settle, signal) =>
    new Promise<void>((done, fail) => calls.push({ tag: message.fields.deliveryTag, message, settle, signal, done, fail }));
  const consumer = new QueueConsumer(
    {
      queue: 'orders',
      prefetch: 10,
      connection,
      logger,
      resume: { initialDelayMs: 5, maxDelayMs: 5, jitter: 0 },
      redeclare: () => Promise.resolve(log.push('redeclare')),
      observers,
      ...overrides,
    },
    handle,
  );
  return {
    consumer,
    log,
    lines,
    events,
    channels,
    calls,
    goneQueue: () => (queueGone = true),
    holdChannels: (gate: Promise<void>) => (channelGate = gate),
  };
}
