import { EventEmitter } from 'node:events';
import type { ConsumeMessage, Message, Options } from 'amqplib';
import { BrokerError, channelClosedError, notFound, operationError, preconditionFailed } from './broker.error.js';
import type { BrokerMessage } from './dead-letter.rules.js';
import { consumeMessage, getMessage, publishedMessage, publishedProperties, returnedMessage } from './message.shape.js';
import { DIRECT_REPLY_QUEUE, replyAddress, type MemoryBroker } from './memory.broker.js';
import type { Enqueued, QueueConsumer } from './memory.queue.js';
import type { MemoryBinding } from './exchange.routing.js';
import type { HandlerCall } from './virtual.clock.js';

/** What a channel asks of its connection. */
export interface ChannelHost {
  readonly id: number;
  readonly broker: MemoryBroker;
  /** The broker closed the whole connection (a connection-level error). */
  fail(error: BrokerError): void;
  forget(channel: MemoryChannel): void;
  /** Told of every publish, for the harness's records; returns a refusal to inject (the confirm is then a nack). */
  published(record: PublishRecord): boolean;
  /** Told of a delivery the channel closed on, unacknowledged: its handler's attempt ended without an answer. */
  interrupted(message: ConsumeMessage): void;
}

/** One publish as the harness records it. */
export interface PublishRecord {
  /** The exchange it was published to (`''`: the default exchange). */
  exchange: string;
  /** Its routing key. */
  routingKey: string;
  /** Its body. */
  content: Buffer;
  /** Its properties as the broker took them (amqplib's, `headers` always an object). */
  properties: Record<string, unknown>;
  /** When it was published (virtual ms since the epoch). */
  at: number;
  /** The queues that took it (none: unroutable). */
  queues: string[];
  /** Whether it was published `mandatory` (returned when no queue takes it). */
  mandatory: boolean;
  /** Set once the broker answered a confirm channel: true for an ack, false for a nack. */
  confirmed?: boolean;
  /** Whether the broker returned it (mandatory, and no queue took it). */
  returned: boolean;
}

interface Unacked {
  queue: string;
  entry: Enqueued;
  consumer?: QueueConsumer;
  /** The delivery as a consumer got it. */
  delivered?: ConsumeMessage;
  /** Its consumer's call, open until the delivery is answered. */
  call?: HandlerCall;
}

type Confirm = (error: Error | null) => void;

/** An amqplib Channel (or ConfirmChannel) of the in-memory broker: the methods and events the library uses, with amqplib's errors. */
export class MemoryChannel extends EventEmitter {
  private open = true;
  private prefetchCount = 0;
  private nextTag = 1;
  private readonly unacked = new Map<number, Unacked>();
  /** The queue each consumer tag of this channel consumes. */
  private readonly consumers = new Map<string, string>();
  private readonly confirms = new Set<Confirm>();
  /** Whether a confirm since the last waitForConfirms was a nack: the next wait rejects. */
  private nackedSinceWait = false;
  /** Whether the channel closed with publishes unconfirmed: every later waitForConfirms rejects, as amqplib's. */
  private closedWithUnconfirmed = false;
  private replyAddress?: string;

  constructor(
    private readonly host: ChannelHost,
    readonly confirm: boolean,
  ) {
    super();
  }

  private get broker(): MemoryBroker {
    return this.host.broker;
  }

  private async rpc<T>(operation: string, run: () => T): Promise<T> {
    if (!this.open) throw new Error('Channel closed');
    await Promise.resolve();
    if (!this.open) throw new Error('Channel ended, no reply will be forthcoming');
    try {
      return run();
    } catch (error) {
      if (!(error instanceof BrokerError)) throw error;
      this.fail(error);
      throw operationError(operation, error);
    }
  }

  assertExchange(exchange: string, type: string, options: Options.AssertExchange = {}) {
    return this.rpc('ExchangeDeclare', () => {
      this.broker.assertExchange(exchange, type, { ...options.arguments });
      return { exchange };
    });
  }

  checkExchange(exchange: string) {
    return this.rpc('ExchangeDeclare', () => (this.broker.checkExchange(exchange), {}));
  }

  assertQueue(queue = '', options: Options.AssertQueue = {}) {
    return this.rpc('QueueDeclare', () => {
      const { durable = true, exclusive = false, autoDelete = false } = options;
      const declared = this.broker.assertQueue(queue, { durable, exclusive, autoDelete, arguments: { ...options.arguments } }, this.host.id);
      return { queue: declared.name, messageCount: declared.ready.length, consumerCount: declared.consumers.length };
    });
  }

  checkQueue(queue: string) {
    return this.rpc('QueueDeclare', () => {
      const found = this.broker.queue(queue);
      return {
        queue,
        messageCount: found.ready.length,
        consumerCount: Math.max(found.consumers.length, this.broker.replyConsumers.has(queue) ? 1 : 0),
      };
    });
  }

  deleteQueue(queue: string) {
    return this.rpc('QueueDelete', () => ({ messageCount: this.broker.deleteQueue(queue) }));
  }

  purgeQueue(queue: string) {
    return this.rpc('QueuePurge', () => ({ messageCount: this.broker.queue(queue).ready.splice(0).length }));
  }

  bindQueue(queue: string, source: string, pattern: string, args?: Record<string, unknown>) {
    return this.binding('QueueBind', { source, destination: queue, destinationType: 'queue', pattern, arguments: args ?? {} });
  }

  unbindQueue(queue: string, source: string, pattern: string, args?: Record<string, unknown>) {
    return this.binding('QueueUnbind', { source, destination: queue, destinationType: 'queue', pattern, arguments: args ?? {} });
  }

  bindExchange(destination: string, source: string, pattern: string, args?: Record<string, unknown>) {
    return this.binding('ExchangeBind', { source, destination, destinationType: 'exchange', pattern, arguments: args ?? {} });
  }

  private binding(operation: 'QueueBind' | 'QueueUnbind' | 'ExchangeBind', binding: MemoryBinding) {
    return this.rpc(operation, () => (operation === 'QueueUnbind' ? this.broker.unbind(binding) : this.broker.bind(binding), {}));
  }

  prefetch(count: number) {
    return this.rpc('BasicQos', () => ((this.prefetchCount = count), {}));
  }

  consume(queue: string, onMessage: (message: ConsumeMessage | null) => void, options: Options.Consume = {}) {
    return this.rpc('BasicConsume', () => {
      const consumerTag = `amq.ctag-memory-${this.broker.next('consumerTag')}`;
      if (queue === DIRECT_REPLY_QUEUE) {
        if (!options.noAck) throw preconditionFailed('reply consumer cannot acknowledge');
        this.replyAddress = replyAddress();
        this.broker.replyConsumers.set(this.replyAddress, (message) => {
          if (this.open) onMessage(consumeMessage(entryOf(message), 0, consumerTag, false, this.broker.rules));
        });
        this.consumers.set(consumerTag, queue);
        return { consumerTag };
      }
      const found = this.broker.queue(queue);
      const quorum = found.type === 'quorum';
      const consumer: QueueConsumer = {
        tag: consumerTag,
        noAck: options.noAck ?? false,
        prefetch: this.prefetchCount,
        unacked: 0,
        deliver: (entry) => {
          const deliveryTag = this.nextTag++;
          const delivered = consumeMessage(entry, deliveryTag, consumerTag, quorum, this.broker.rules);
          const unacked: Unacked | undefined = consumer.noAck ? undefined : { queue, entry, consumer, delivered };
          if (unacked) this.unacked.set(deliveryTag, unacked);
          const call = this.broker.clock.startCall((started) => {
            if (unacked) unacked.call = started;
            try {
              onMessage(delivered);
            } catch (error) {
              this.emit('handler-error', error, 'delivery');
            }
          });
          // Answered already (or nothing to answer): the call is over.
          if (!unacked || this.unacked.get(deliveryTag) !== unacked) this.broker.clock.endCall(call);
        },
      };
      found.consumers.push(consumer);
      found.hadConsumer = true;
      this.consumers.set(consumerTag, queue);
      this.broker.pump(found);
      return { consumerTag };
    });
  }

  cancel(consumerTag: string) {
    return this.rpc('BasicCancel', () => (this.dropConsumer(consumerTag), { consumerTag }));
  }

  get(queue: string, options: Options.Get = {}) {
    return this.rpc('BasicGet', () => {
      const found = this.broker.queue(queue);
      this.broker.expireHead(found);
      const entry = found.ready.shift();
      if (!entry) return false as const;
      const deliveryTag = this.nextTag++;
      if (!options.noAck) this.unacked.set(deliveryTag, { queue, entry });
      return getMessage(entry, deliveryTag, found.ready.length, found.type === 'quorum', this.broker.rules);
    });
  }

  publish(exchange: string, routingKey: string, content: Buffer, options: Options.Publish = {}, callback?: Confirm): boolean {
    if (!this.open) throw new Error('Channel closed');
    const properties = publishedProperties(options);
    if (properties.replyTo === DIRECT_REPLY_QUEUE) {
      if (!this.replyAddress) return this.failLater(preconditionFailed('fast reply consumer does not exist'), callback);
      properties.replyTo = this.replyAddress;
    }
    if (properties.expiration !== undefined && !/^\d+$/.test(properties.expiration)) {
      return this.failLater(preconditionFailed(`invalid expiration '${properties.expiration}'`), callback);
    }
    const message = publishedMessage(exchange, routingKey, Buffer.from(content), properties);
    if (exchange !== '' && !this.broker.exchanges.has(exchange)) return this.failLater(notFound('exchange', exchange), callback);
    const record: PublishRecord = {
      exchange,
      routingKey,
      content: Buffer.from(content),
      properties,
      at: this.broker.clock.now,
      queues: [],
      mandatory: options.mandatory ?? false,
      returned: false,
      ...(this.confirm ? { confirmed: undefined } : {}),
    };
    // An injected refusal is the broker not taking the message: nacked, and routed nowhere.
    const injected = this.host.published(record);
    const { queues, refused } = injected ? { queues: [], refused: true } : this.broker.publish(exchange, message);
    record.queues = queues;
    // Returned (312 NO_ROUTE) only when no queue matched: one that matched and refused it (its length limit) gives the nack alone, as RabbitMQ does.
    record.returned = !injected && !refused && queues.length === 0 && record.mandatory;
    if (record.returned || this.confirm) {
      const confirm = callback ?? (() => undefined);
      if (this.confirm) this.confirms.add(confirm);
      const answer = () => {
        if (!this.open) return;
        if (record.returned) this.emit('return', returnedMessage(message) as Message);
        if (!this.confirm) return;
        this.confirms.delete(confirm);
        record.confirmed = !refused;
        if (refused) this.nackedSinceWait = true;
        confirm(refused ? new Error('message nacked') : null);
      };
      this.broker.clock.schedule(0, answer, { broker: true });
    }
    return true;
  }

  /** Resolves once every publish so far is confirmed; rejects when one since the last wait was nacked, or the channel closed with publishes unconfirmed. */
  async waitForConfirms(): Promise<void> {
    while (this.confirms.size > 0) await new Promise<void>((resolve) => this.broker.clock.schedule(0, resolve, { broker: true }));
    if (this.closedWithUnconfirmed) throw new Error('channel closed');
    if (this.nackedSinceWait) {
      this.nackedSinceWait = false;
      throw new Error('message nacked');
    }
  }

  ack(message: Message, allUpTo = false): void {
    this.settle(message, allUpTo, () => undefined);
  }

  nack(message: Message, allUpTo = false, requeue = true): void {
    this.settle(message, allUpTo, (u) => (requeue ? this.broker.requeue(u.queue, u.entry) : this.broker.reject(u.queue, u.entry)));
  }

  async close(): Promise<void> {
    if (!this.open) throw new Error('Channel closed');
    await Promise.resolve();
    this.teardown();
  }

  /** The connection closed or was lost: the channel closes with it, without an 'error'. */
  connectionClosed(): void {
    this.teardown();
  }

  private settle(message: Message, allUpTo: boolean, action: (u: Unacked) => void): void {
    if (!this.open) throw new Error('Channel closed');
    const tag = message.fields.deliveryTag;
    if (!this.unacked.has(tag)) return void this.failLater(preconditionFailed(`unknown delivery tag ${tag}`));
    const tags = allUpTo ? [...this.unacked.keys()].filter((t) => t <= tag) : [tag];
    for (const t of tags) this.release(t, action);
  }

  private release(tag: number, action: (u: Unacked) => void): void {
    const u = this.unacked.get(tag);
    if (!u) return;
    this.unacked.delete(tag);
    this.broker.clock.endCall(u.call);
    if (u.consumer) u.consumer.unacked--;
    action(u);
    const queue = this.broker.queues.get(u.queue);
    if (queue) this.broker.pump(queue);
  }

  private dropConsumer(consumerTag: string): void {
    const consumed = this.consumers.get(consumerTag);
    this.consumers.delete(consumerTag);
    if (consumed === undefined) return;
    if (consumed === DIRECT_REPLY_QUEUE && this.replyAddress) {
      this.broker.replyConsumers.delete(this.replyAddress);
      this.replyAddress = undefined;
      return;
    }
    const queue = this.broker.queues.get(consumed);
    queue?.removeConsumer(consumerTag);
    if (queue && queue.declaration.autoDelete && queue.hadConsumer && queue.consumers.length === 0) this.broker.deleteQueue(queue.name);
  }

  /** The broker refuses something sent without a reply (a publish, an ack): the channel closes on the next turn. */
  private failLater(error: BrokerError, callback?: Confirm): boolean {
    if (callback) this.confirms.add(callback);
    this.broker.clock.schedule(0, () => this.fail(error), { broker: true });
    return true;
  }

  private fail(error: BrokerError): void {
    if (!this.open) return;
    if (error.connection) return this.host.fail(error);
    this.emit('error', channelClosedError(error));
    this.teardown();
  }

  private teardown(): void {
    if (!this.open) return;
    this.open = false;
    for (const tag of [...this.consumers.keys()]) this.dropConsumer(tag);
    for (const tag of [...this.unacked.keys()].sort((a, b) => a - b)) {
      this.release(tag, (u) => {
        this.broker.requeue(u.queue, u.entry);
        if (u.delivered) this.host.interrupted(u.delivered);
      });
    }
    const closed = new Error('channel closed');
    this.closedWithUnconfirmed = this.confirms.size > 0;
    for (const confirm of [...this.confirms]) confirm(closed);
    this.confirms.clear();
    this.host.forget(this);
    this.emit('close');
  }
}

/** A direct reply as a queue entry, for the shape of its delivery. */
const entryOf = (message: BrokerMessage): Enqueued => ({ message, seq: 0, redelivered: false, deliveryCount: 0 });
