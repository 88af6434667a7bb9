import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Logger } from '@nestjs/common';
import { ClientProxy, RmqRecord, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import type { ConsumeMessage, Options } from 'amqplib';
import { AsyncSubject, connectable, defer, type Observable } from 'rxjs';
import { DirectReplyChannel } from '../amqp/direct-reply.channel.js';
import { readPublishDelay } from '../core/delivery/delay.plan.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { readReply } from './rpc.packet.js';
import { readOptionsObject, resolveModuleConfig, type ModuleConfig } from '../core/config/module.config.js';
import { RetryEngine } from '../engine/retry.engine.js';
import { resolveObservers } from '../observability/observers.resolve.js';
import { RetryConfigError } from '../errors/retry-config.error.js';
import type { RetryClientOptions, RetryEmitOptions } from './retry-transport.options.js';
import { publishProperties, readPublishOptions, type PublishedMessage } from '../core/publish/publish.options.js';
import { copyOwn } from '../core/headers/own-keys.copy.js';
import { replyTargetProblem } from '../core/publish/reply-address.rules.js';

/** The transport client's status, as Nest's RMQ client names it. */
export type RetryClientStatus = 'connected' | 'disconnected';

/**
 * A `ClientProxy` on the retry engine's publishing connection. `emit` resolves when the broker has confirmed the event
 * (and a queue took it), and can delay it (`{ delay: '30m' }`, through the delay ladder); `send` is request-response
 * over direct reply-to. The messages are Nest's RMQ envelope, so RetryServer and Nest's ServerRMQ both read them.
 * In an application with RetryModule, give it the module's engine: one pair of connections and one delay forwarder.
 * @example ClientsModule.register([{ name: 'ORDERS', customClass: RetryClient, options: { queue: 'orders' } }])
 * @example
 * ClientsModule.registerAsync([{ name: 'ORDERS', inject: [RetryEngine],
 *   useFactory: (engine: RetryEngine) => ({ customClass: RetryClient, options: { queue: 'orders', engine } }) }])
 */
export class RetryClient extends ClientProxy {
  private readonly logger = new Logger('RetryClient');
  private readonly config: ModuleConfig;
  private readonly events = new EventEmitter();
  private engine?: RetryEngine;
  private connecting?: Promise<void>;
  private requests?: DirectReplyChannel;
  /** How often close() ran: an open() that began before the last one gives up. */
  private closes = 0;

  constructor(private readonly options: RetryClientOptions = {}) {
    super();
    readOptionsObject(options, 'RetryClient options', "Pass an options object, e.g. new RetryClient({ url: 'amqp://localhost', queue: 'orders' }).");
    this.config = resolveModuleConfig(options, process.env);
    if ((options.exchange === undefined) === (options.queue === undefined)) {
      throw new RetryConfigError(
        'RetryClient option "exchange" or "queue"',
        options.exchange === undefined ? 'is missing' : 'are both given',
        "Give one: queue: 'orders' sends to that queue by name (as Nest's ClientRMQ does), exchange: 'orders' publishes with the pattern as routing key.",
      );
    }
    this.initializeSerializer({});
    this.initializeDeserializer({});
    this.events.on('error', () => undefined);
  }

  /** Opens the publishing connection (and, with delayed delivery on, starts forwarding due delayed messages). */
  connect(): Promise<void> {
    const connecting = (this.connecting ??= this.open());
    connecting.catch((error: unknown) => {
      if (this.connecting === connecting) this.connecting = undefined; // a failed connect can be tried again
      this.events.emit('error', error);
    });
    return connecting;
  }

  /** Fails the requests still waiting, then closes its channel and its own connections (a shared engine is the module's). */
  async close(): Promise<void> {
    this.closes++;
    this.failPending('the client was closed');
    const { engine, requests } = this;
    this.engine = undefined;
    this.connecting = undefined;
    this.requests = undefined;
    await requests?.close();
    if (engine !== this.options.engine) await engine?.close();
    this._status$?.next('disconnected');
  }

  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- ClientProxy declares it so
  override on<EventKey extends never = never, EventCallback extends Function = Function>(event: EventKey, callback: EventCallback): void {
    this.events.on(event, callback as unknown as (...args: unknown[]) => void);
  }

  unwrap<T>(): T {
    if (!this.engine) throw new Error('RetryClient is not connected: call connect() first, or emit/send');
    return this.engine as T;
  }

  /**
   * Publishes an event; the returned observable emits what was sent (a PublishedMessage: the message id among others)
   * and completes once the broker confirmed it (errors: PublishError, NotConnectedError, RangeError for a bad delay or
   * property). Hot, like Nest's: it is sent even if nobody subscribes.
   * @example const { messageId } = await lastValueFrom(client.emit<PublishedMessage>('order.created', order, { correlationId }));
   */
  override emit<TResult = unknown, TInput = unknown>(pattern: unknown, data: TInput, options?: RetryEmitOptions): Observable<TResult> {
    // Checked before connecting: a bad call opens nothing.
    const source = defer(async () => {
      if (pattern === undefined || pattern === null || data === undefined || data === null) {
        throw new Error('RetryClient.emit: give a pattern and data (neither may be null or undefined)');
      }
      const given = readPublishOptions(options, 'RetryClient.emit');
      await this.connect();
      return this.dispatch({ pattern, data }, given) as Promise<TResult>;
    });
    // AsyncSubject: a subscriber that comes after the confirm still gets what was sent (and an error, as Nest's does).
    const hot = connectable(source, { connector: () => new AsyncSubject<TResult>(), resetOnDisconnect: false });
    hot.connect();
    return hot;
  }

  /** Nest's ClientProxy hook behind `emit()`: publishes the event, resolving once the broker confirmed it. */
  protected dispatchEvent<T = unknown>(packet: ReadPacket): Promise<T> {
    return this.dispatch(packet, {}) as Promise<T>;
  }

  /** Nest's ClientProxy hook behind `send()`: publishes the request; `callback` gets the reply. Returns the cancel. */
  protected publish(request: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    const id = randomUUID();
    this.routingMap.set(id, callback);
    const failed = (error: unknown) => this.settle(id, { err: new Error(`RetryClient.send: ${errorMessage(error)}`), isDisposed: true });
    try {
      const { exchange, routingKey, content, options } = this.encode(request, id);
      const properties = { persistent: this.options.persistent ?? true, ...options, correlationId: id, contentType: 'application/json' };
      const channel = this.requestChannel(); // first: closed since connect() says so, not "not connected"
      // A property the broker refuses would close the channel every request in flight shares: checked as emit's are.
      const engine = this.unwrap<RetryEngine>();
      // Its replyTo is the channel's own direct reply-to, whatever the options said.
      engine.checkPublishProperties({ ...properties, replyTo: undefined });
      const target = replyTargetProblem(exchange, routingKey, false);
      if (target !== undefined) throw new RangeError(`Cannot send a request to ${target}.`);
      // Observed as an emit is: the request carries the caller's trace context, as an event does.
      engine.sendObserved(exchange, routingKey, properties, (sent) => channel.send(exchange, routingKey, content, sent)).catch(failed);
    } catch (error) {
      // A packet JSON cannot write (a BigInt, a pattern nested too deep), a refused property, or closed since
      // connect(): the caller gets the error, and no callback is left behind
      failed(error);
    }
    return () => void this.routingMap.delete(id);
  }

  private async open(): Promise<void> {
    const closes = this.closes;
    const shared = this.options.engine;
    if (shared) {
      // The module's engine: its publishing connection (opened if need be), its ladder and forwarder. Nothing of ours.
      await shared.connectPublisher();
      if (closes !== this.closes) return;
      this.engine = shared;
      this._status$?.next('connected');
      return;
    }
    const observers = await resolveObservers(this.options);
    if (closes !== this.closes) return; // closed while the observers loaded: open nothing that close() cannot see
    const engine = RetryEngine.fromConfig(this.config, this.logger, observers);
    this.engine = engine;
    try {
      await engine.connectPublisher();
      if (this.config.delayPrefix !== undefined) {
        await engine.prepare([]);
        await engine.consume();
      }
    } catch (error) {
      this.engine = undefined;
      await engine.close();
      throw error;
    }
    this._status$?.next('connected');
  }

  private async dispatch(event: ReadPacket, options: RetryEmitOptions): Promise<PublishedMessage> {
    const engine = this.engine;
    if (!engine) throw new Error('RetryClient is closed');
    const delayMs = options.delay === undefined ? 0 : readPublishDelay(options.delay);
    const { exchange, routingKey, content, options: record } = this.encode(event);
    // The emit's options over the RmqRecord's (kept as given but for these), over the client's `persistent`.
    const given: RetryEmitOptions = copyOwn(options);
    given.persistent = options.persistent ?? record?.persistent ?? this.options.persistent;
    given.messageId = options.messageId ?? record?.messageId;
    given.headers = record?.headers || options.headers ? copyOwn(record?.headers, options.headers) : undefined;
    const properties = publishProperties(given, Object.assign(copyOwn(record), { contentType: 'application/json' }));
    await engine.publish(exchange, routingKey, content, properties, delayMs);
    return { messageId: properties.messageId, exchange, routingKey, delayMs, properties };
  }

  /**
   * A packet as sent: to the exchange with the pattern as routing key, or to the queue by name; Nest's envelope (with
   * `id`, a request's) as JSON. Nest's RmqRecord (`new RmqRecordBuilder(data).setOptions({ headers, priority }).build()`)
   * is read as ClientRMQ reads it: its data is the payload, its options the message's properties.
   */
  private encode(raw: ReadPacket, id?: string): { exchange: string; routingKey: string; content: Buffer; options?: Options.Publish } {
    const record = raw.data instanceof RmqRecord ? (raw.data as RmqRecord<unknown>) : undefined;
    const packet = record ? { ...raw, data: record.data } : raw;
    const { exchange = '', queue = '' } = this.options;
    const routingKey = this.options.exchange === undefined ? queue : this.normalizePattern(packet.pattern as string);
    const serialized = this.serializer.serialize(packet);
    const content = Buffer.from(JSON.stringify(id === undefined ? serialized : { ...serialized, id }));
    return { exchange, routingKey, content, options: record?.options as Options.Publish | undefined };
  }

  private requestChannel(): DirectReplyChannel {
    const engine = this.engine;
    if (!engine) throw new Error('RetryClient is closed');
    this.requests ??= new DirectReplyChannel(() => engine.publishingChannel('RetryClient requests'), {
      reply: (message) => this.onReply(message),
      returned: (id) =>
        this.settle(id, { err: new Error('RetryClient.send: no queue took the request (is the server listening?)'), isDisposed: true }),
      lost: (reason) => this.failPending(reason),
    });
    return this.requests;
  }

  private onReply(message: ConsumeMessage): void {
    const id: unknown = message.properties.correlationId;
    if (typeof id !== 'string') return;
    this.settle(id, readReply(message.content));
  }

  private settle(id: string, reply: WritePacket): void {
    const callback = this.routingMap.get(id) as ((packet: WritePacket) => void) | undefined;
    if (!callback) return;
    if (reply.isDisposed || reply.err !== undefined) this.routingMap.delete(id);
    callback(reply);
  }

  private failPending(reason: string): void {
    for (const id of [...this.routingMap.keys()]) this.settle(id, { err: new Error(`RetryClient.send: ${reason}`), isDisposed: true });
  }
}
