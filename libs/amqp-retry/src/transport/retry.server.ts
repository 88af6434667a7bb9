import { EventEmitter } from 'node:events';
import { Logger } from '@nestjs/common';
import { Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import type { ConsumeMessage } from 'amqplib';
import { isObservable, lastValueFrom, type Observable } from 'rxjs';
import type { DeliveryRoute, RetryPolicy } from '../amqp/retry-delivery.handler.js';
import { POSITIVE_TIME_LIMIT_RANGE, readDuration } from '../core/config.readers.js';
import { maskingLogger } from '../core/credentials.mask.js';
import type { RetryLogger } from '../core/retry-logger.js';
import { errorMessage } from '../core/error-message.js';
import type { HandlerConfig } from '../core/handler-config.js';
import { resolveModuleConfig, type ModuleConfig } from '../core/module-config.js';
import type { RetryContext } from '../core/retry-context.js';
import { firstRoute } from '../core/first-failure.js';
import type { XDeath } from '../core/x-death.parser.js';
import { RetryEngine } from '../engine/retry.engine.js';
import { resolveObservers } from '../observability/observers.resolve.js';
import { patternPolicy, policyExtras, queueConfig } from './pattern-policies.js';
import { RequestReplies } from './request-replies.js';
import { RetryRmqContext, type RetryChannelRef } from './retry-rmq.context.js';
import type { RetryServerOptions } from './retry-transport.options.js';
import { unwrapRpcError } from './rpc-error.js';
import { patternAsString, readPacket, type InboundPacket } from './rpc-packet.js';

interface PatternEntry {
  handler: MessageHandler;
  policy: RetryPolicy;
  /**
   * The handler's own pattern, as the code declared it (Nest's string form). Metrics and traces are labelled with it,
   * never with a client's spelling of it: `{"cmd":  "sum"}` and `{"cmd":"sum"}` reach one handler, and a label per
   * spelling would let any client grow /metrics without bound.
   */
  pattern: string;
}

/** The extras of a pattern's handlers, the first and those Nest chained after it (`next`). */
function chainOf(handler: MessageHandler): unknown[] {
  const extras: unknown[] = [];
  for (let h: Partial<MessageHandler> | undefined = handler; h; h = h.next as Partial<MessageHandler> | undefined) extras.push(h.extras);
  return extras;
}

/** How long a @MessagePattern handler may take by default before its caller gets a timeout error. */
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** The transport's status, as Nest's RMQ transport names it. */
export type RetryServerStatus = 'connected' | 'disconnected';

/**
 * A `@nestjs/microservices` transport on the retry engine. `@EventPattern` handlers get broker-side retries with the
 * pattern's policy and parking; `@MessagePattern` handlers answer requests (no retries: the caller waits). Messages
 * are Nest's RMQ envelope, so Nest's ClientRMQ and RetryClient both talk to it; a body without the envelope is an
 * event named by its routing key. A message no handler takes is parked as `no-handler`.
 * @example NestFactory.createMicroservice(AppModule, { strategy: new RetryServer({ queue: 'orders', delays: ['1s', '10s'] }) })
 */
export class RetryServer extends Server implements CustomTransportStrategy {
  /** Event handlers' errors reach the transport (it awaits their streams and retries or parks): Nest need not log them. */
  override readonly propagatesEventHandlerErrors = true;
  private readonly moduleConfig: ModuleConfig;
  private readonly events = new EventEmitter();
  private readonly routeLogger: RetryLogger = maskingLogger(new Logger('RetryServer'));
  private engine?: RetryEngine;
  private table = new Map<string, PatternEntry>();
  private queue?: HandlerConfig;
  private answers?: RequestReplies;
  private readonly requestTimeoutMs: number;
  private warnedManualAck = false;
  private readonly channelRef: RetryChannelRef = {
    ack: () => this.warnManualAck(),
    nack: () => this.warnManualAck(),
    reject: () => this.warnManualAck(),
  };

  constructor(private readonly options: RetryServerOptions) {
    super();
    // Invalid configuration fails here, where the application is created, naming the option.
    this.moduleConfig = resolveModuleConfig(options, process.env);
    queueConfig(options, this.moduleConfig, []);
    this.requestTimeoutMs =
      options.requestTimeout === undefined
        ? DEFAULT_REQUEST_TIMEOUT_MS
        : readDuration(options.requestTimeout, 'RetryServer option "requestTimeout"', "'30s'", POSITIVE_TIME_LIMIT_RANGE);
    this.events.on('error', () => undefined); // an 'error' nobody listens to must not throw
  }

  async listen(callback: (error?: unknown) => void): Promise<void> {
    try {
      await this.start();
    } catch (error) {
      this.events.emit('error', error);
      return callback(error);
    }
    callback();
  }

  /** Stops consuming (handlers in flight finish, up to the shutdown timeout), then closes its own connections. */
  async close(): Promise<void> {
    const engine = this.engine;
    this.engine = undefined;
    if (engine && this.queue) {
      if (this.options.engine) await engine.detach([this.queue.queue]);
      else await engine.close();
    }
    await this.answers?.close(); // after the requests in flight have replied
    this._status$?.next('disconnected');
  }

  /** 'error': the start failed (also given to listen's callback). */
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- Nest's Server declares it so
  on<EventKey extends string = string, EventCallback extends Function = Function>(event: EventKey, callback: EventCallback): void {
    this.events.on(event, callback as unknown as (...args: unknown[]) => void);
  }

  /** The retry engine underneath (connections, publishing). */
  unwrap<T>(): T {
    if (!this.engine) throw new Error('RetryServer is not listening yet: call app.listen() or app.startAllMicroservices() first');
    return this.engine as T;
  }

  private async start(): Promise<void> {
    const handlers = [...this.getHandlers()];
    const bindings = handlers.map(([pattern]) => pattern).filter((p) => p.length > 0 && Buffer.byteLength(p) <= 255);
    const queue = queueConfig(this.options, this.moduleConfig, bindings);
    const schedules: HandlerConfig[] = [];
    const table = new Map<string, PatternEntry>();
    for (const [pattern, handler] of handlers) {
      const { policy, schedule } = handler.isEventHandler
        ? patternPolicy(pattern, policyExtras(pattern, chainOf(handler)), queue, this.options, this.moduleConfig)
        : { policy: queue, schedule: undefined };
      if (schedule) schedules.push(schedule);
      table.set(pattern, { handler, policy, pattern });
    }
    this.table = table;
    this.queue = queue;
    const engine = this.options.engine ?? new RetryEngine(this.moduleConfig, this.routeLogger, await resolveObservers(this.options));
    this.answers = new RequestReplies(engine, this.routeLogger, this.requestTimeoutMs);
    const handler = {
      config: queue,
      where: `RetryServer "${queue.queue}"`,
      invoke: () => Promise.reject(new Error('the transport routes every delivery')),
      route: (payload: unknown, message: ConsumeMessage, deaths: readonly XDeath[]) => this.route(payload, message, deaths),
      schedules,
    };
    this.engine = engine;
    if (this.options.engine) await engine.attach([handler]);
    else await engine.start([handler]);
    this._status$?.next('connected');
  }

  /** Never throws: a pattern that cannot be read parks the message as malformed. */
  private route(payload: unknown, message: ConsumeMessage, deaths: readonly XDeath[]): DeliveryRoute {
    let packet: InboundPacket;
    let entry: PatternEntry | undefined;
    try {
      // A body without the envelope is named by its publisher's key, which a retry's delivery no longer carries.
      const headers = message.properties.headers as Record<string, unknown> | undefined;
      const { routingKey } = firstRoute(headers, deaths, this.queue?.queue ?? '', message.fields);
      const { replyTo, correlationId } = message.properties;
      packet = readPacket(payload, { routingKey, replyTo: replyTo as unknown, correlationId: correlationId as unknown }, patternAsString);
      entry = this.table.get(this.getRouteFromPattern(packet.pattern));
    } catch (error) {
      return { kind: 'park', reason: 'malformed', error: new Error(`the message's pattern cannot be read: ${errorMessage(error)}`) };
    }
    const replies = this.replies();
    if (!entry) {
      const error = new Error(`no handler for the pattern ${JSON.stringify(packet.pattern)} on "${this.queue?.queue}"`);
      const request = packet.kind === 'request' ? packet : undefined;
      const notify = request ? () => replies.noHandler(request) : undefined;
      return { kind: 'park', reason: 'no-handler', error, notify };
    }
    const { handler, policy } = entry;
    if (packet.kind === 'request') {
      const request = packet;
      return { kind: 'once', run: (retry) => replies.answer(request, this.produce(handler, request.data, message, request.pattern, retry)) };
    }
    const { pattern, data } = packet;
    // An event for a @MessagePattern runs once, as Nest runs it, with nobody to answer: a failure parks it.
    const once = handler.isEventHandler ? policy : { ...policy, maxAttempts: 1 };
    // The handler's context gets the pattern as sent (as Nest's RMQ transport gives it); observers get the handler's.
    return {
      kind: 'handle',
      payload: data,
      policy: once,
      pattern: entry.pattern,
      invoke: (d, retry) => this.runEvent(handler, d, message, pattern, retry),
    };
  }

  /** Runs an event handler through Nest's pipeline and waits for what it returned; rejects with the unwrapped error. */
  private async runEvent(handler: MessageHandler, data: unknown, message: ConsumeMessage, pattern: string, retry: RetryContext): Promise<void> {
    try {
      const result: unknown = await handler(data, new RetryRmqContext(message, pattern, retry, this.channelRef));
      if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
    } catch (error) {
      throw unwrapRpcError(error);
    }
  }

  /** A request handler's response stream (a failure becomes the stream's error, as in Nest's transports). */
  private produce(
    handler: MessageHandler,
    data: unknown,
    message: ConsumeMessage,
    pattern: string,
    retry: RetryContext,
  ): () => Promise<Observable<unknown>> {
    return async () => this.transformToObservable(await handler(data, new RetryRmqContext(message, pattern, retry, this.channelRef)));
  }

  private replies(): RequestReplies {
    if (!this.answers) throw new Error('RetryServer is not listening');
    return this.answers;
  }

  private warnManualAck(): void {
    if (this.warnedManualAck) return;
    this.warnedManualAck = true;
    this.routeLogger.warn(
      'A handler called ack/nack/reject on ctx.getChannelRef(): RetryServer settles every message itself (ack on success, retry or park on failure), so the call does nothing; remove the manual acknowledgement',
    );
  }
}
