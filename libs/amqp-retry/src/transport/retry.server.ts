import { EventEmitter } from 'node:events';
import { Logger } from '@nestjs/common';
import { RpcException, Server, type CustomTransportStrategy, type MessageHandler, type Transport } from '@nestjs/microservices';
import { finalize, isObservable, lastValueFrom } from 'rxjs';
import type { DeliveryRouter, RetryPolicy } from '../pipeline/delivery.contracts.js';
import { POSITIVE_TIME_LIMIT_RANGE, readDuration } from '../core/config/config.readers.js';
import { maskingLogger } from '../core/text/credentials.mask.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { errorMessage } from '../core/text/error-message.format.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import { readOptionsObject, resolveModuleConfig, type ModuleConfig } from '../core/config/module.config.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { firstRoute } from '../core/delivery/first-failure.headers.js';
import type { PatternPolicyLine } from '../core/text/consuming-line.format.js';
import { RetryEngine } from '../engine/retry.engine.js';
import type { EngineHandler } from '../engine/handler.runtime.js';
import { resolveObservers } from '../observability/observers.resolve.js';
import { patternPolicy, policyExtras, queueConfig } from './pattern.policies.js';
import { checkPartitionChannels } from '../core/partitions/server-partitions.config.js';
import { tierQueues } from '../core/topology/retry-topology.plan.js';
import { hasTopicWildcard, topicMatches } from '../core/topology/topic-pattern.match.js';
import { RequestReplies } from './request.replies.js';
import { RetryRmqContext, type RetryChannelRef } from './retry-rmq.context.js';
import type { RetryServerOptions } from './retry-transport.options.js';
import { patternAsString, readPacket, type InboundPacket } from './rpc.packet.js';
import { sleep } from '../core/time/duration.timer.js';

/** Pattern texts whose route RetryServer keeps (routeOf); beyond, a route is worked out each time, as Nest does. */
const ROUTE_CACHE_SIZE = 1_000;
/** The longest pattern text kept in the route cache: the cache holds at most ROUTE_CACHE_SIZE x this many characters. */
const ROUTE_CACHE_KEY_MAX = 256;

/** Nest's hook around a handler call (`Server.setOnProcessingStartHook`): it runs the call through `done`. */
type ProcessingStartHook = (transportId: Transport | symbol, context: unknown, done: () => Promise<unknown>) => void;
/** Nest's hook after a handler call and its stream (`Server.setOnProcessingEndHook`). */
type ProcessingEndHook = (transportId: Transport | symbol, context: unknown) => void;

/** The extras of a pattern's handlers, the first and those Nest chained after it (`next`). */
function chainOf(handler: MessageHandler): unknown[] {
  const extras: unknown[] = [];
  for (let h: Partial<MessageHandler> | undefined = handler; h; h = h.next as Partial<MessageHandler> | undefined) extras.push(h.extras);
  return extras;
}

/**
 * The error an event handler failed with: an `RpcException` is unwrapped to the error it carries, so
 * `new RpcException(new NonRetryableError('...'))` parks at once.
 */
function unwrapRpcError(error: unknown): unknown {
  let inner = error;
  for (let depth = 0; depth < 8 && inner instanceof RpcException; depth++) inner = inner.getError();
  return inner;
}

/** How long a @MessagePattern handler may take by default before its caller gets a timeout error. */
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** The transport's status, as Nest's RMQ transport names it. */
export type RetryServerStatus = 'connected' | 'disconnected';

/**
 * A `@nestjs/microservices` transport on the retry engine. `@EventPattern` handlers get broker-side retries with the
 * pattern's policy and parking; `@MessagePattern` handlers answer requests (no retries: the caller waits). Messages
 * are Nest's RMQ envelope, so Nest's ClientRMQ and RetryClient both talk to it; a body without the envelope is an
 * event named by its routing key. A pattern no handler has is matched against the handlers' topic wildcards (`*`,
 * `#`: `order.*` takes `order.created`), as Nest's ServerRMQ with `wildcards: true`; a message no handler takes is
 * parked as `no-handler`.
 * @example NestFactory.createMicroservice(AppModule, { strategy: new RetryServer({ queue: 'orders', delays: ['1s', '10s'] }) })
 */
export class RetryServer extends Server implements CustomTransportStrategy {
  /** Event handlers' errors reach the transport (it awaits their streams and retries or parks): Nest need not log them. */
  override readonly propagatesEventHandlerErrors = true;
  private readonly moduleConfig: ModuleConfig;
  private readonly events = new EventEmitter();
  private readonly routeLogger: RetryLogger = maskingLogger(new Logger('RetryServer'));
  private engine?: RetryEngine;
  /** The handlers by their own pattern (Nest's string form). */
  private table = new Map<string, MessageHandler>();
  /** The handlers' patterns with a topic wildcard, in the handlers' order. */
  private wildcards: string[] = [];
  /** The handler's pattern of each pattern text seen that has one (routeOf): at most ROUTE_CACHE_SIZE. */
  private readonly routes = new Map<string, string>();
  private queue?: HandlerConfig;
  private answers?: RequestReplies;
  private readonly requestTimeoutMs: number;
  private warnedManualAck = false;
  /** Nest's processing hooks, once an instrumentation set them (setOnProcessingStartHook, setOnProcessingEndHook). */
  private startHook?: ProcessingStartHook;
  private endHook?: ProcessingEndHook;
  /** The start listen() began, while it runs: close() waits for it, so that nothing it opens outlives close(). */
  private starting?: Promise<void>;
  /** How often close() ran: a start that began before the last one closes what it opened and gives up. */
  private closes = 0;
  private readonly warnManualAck = (): void => {
    if (this.warnedManualAck) return;
    this.warnedManualAck = true;
    this.routeLogger.warn(
      'A handler called ack/nack/reject on ctx.getChannelRef(): RetryServer settles every message itself (ack on success, retry or park on failure), so the call does nothing; remove the manual acknowledgement',
    );
  };
  private readonly channelRef: RetryChannelRef = { ack: this.warnManualAck, nack: this.warnManualAck, reject: this.warnManualAck };

  constructor(private readonly options: RetryServerOptions) {
    super();
    // Invalid configuration fails here, where the application is created, naming the option.
    readOptionsObject(options, 'RetryServer options', "Pass an options object, e.g. new RetryServer({ url: 'amqp://localhost', queue: 'orders' }).");
    this.moduleConfig = resolveModuleConfig(options, process.env);
    queueConfig(options, this.moduleConfig, []);
    const timeoutKey = 'RetryServer option "requestTimeout"';
    this.requestTimeoutMs = readDuration(options.requestTimeout, timeoutKey, "'30s'", POSITIVE_TIME_LIMIT_RANGE, DEFAULT_REQUEST_TIMEOUT_MS);
    this.events.on('error', () => undefined); // an 'error' nobody listens to must not throw
  }

  async listen(callback: (error?: unknown) => void): Promise<void> {
    const closes = this.closes;
    const starting = (this.starting = this.start());
    try {
      await starting;
    } catch (error) {
      if (closes !== this.closes) return callback(); // cut short by close(): not a failure to start
      this.events.emit('error', error);
      return callback(error);
    }
    callback();
  }

  /** Stops consuming (handlers in flight finish, up to the shutdown timeout), then closes its own connections. */
  async close(): Promise<void> {
    this.closes++;
    const engine = this.engine;
    this.engine = undefined;
    if (engine && this.queue) {
      if (this.options.engine) await engine.detach([this.queue.queue]);
      else await engine.close(); // cuts a start in progress short
    }
    // A start still under way (close() during app.listen(), or a SIGTERM at start-up) closes what it opened itself.
    // At most the shutdown timeout: a start that never settles holds nothing once the engine is closed.
    const starting = this.starting?.catch(() => undefined);
    if (starting) await Promise.race([starting, sleep(this.moduleConfig.shutdownTimeoutMs, { unref: true })]);
    this.starting = undefined;
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
    const closes = this.closes;
    const handlers = [...this.getHandlers()];
    const bindings = handlers.map(([pattern]) => pattern).filter((p) => p.length > 0 && Buffer.byteLength(p) <= 255);
    const queue = queueConfig(this.options, this.moduleConfig, bindings);
    this.table = new Map(handlers);
    this.wildcards = [...this.table.keys()].filter(hasTopicWildcard);
    this.routes.clear();
    this.queue = queue;
    // Patterns' extras are read (and refused) here, before any connection: for the queue, and per partition below.
    const routing = this.routingOf(queue);
    if (queue.partitions) {
      // Every partition runs every schedule: one instance owning them all must open their channels on one connection.
      const schedules = 1 + new Set(routing.schedules.map((schedule) => tierQueues(schedule)[0])).size;
      checkPartitionChannels(queue.partitions.count, schedules, (key) => `RetryServer option "${key}"`);
    }
    const engine = this.options.engine ?? RetryEngine.fromConfig(this.moduleConfig, this.routeLogger, await resolveObservers(this.options));
    if (closes !== this.closes) return; // closed while the observers loaded: open nothing that close() cannot see
    this.answers = new RequestReplies(engine, this.routeLogger, this.requestTimeoutMs);
    const handler: EngineHandler = {
      config: queue,
      where: `RetryServer "${queue.queue}"`,
      invoke: () => Promise.reject(new Error('the transport routes every delivery')),
      ...routing,
      // Each partition queue is a handler queue of its own: its patterns' schedules, tiers and first routes are its own.
      forPartition: queue.partitions ? (partition) => this.routingOf(partition) : undefined,
    };
    this.engine = engine;
    if (this.options.engine) await engine.attach([handler]);
    else await engine.start([handler]);
    // close() came while starting: a shared engine's attach() added the queue after close() detached it, which is
    // undone here, before close() returns. An own engine close() has closed already, and it opens nothing after that.
    if (closes !== this.closes) {
      if (this.options.engine) await engine.detach([queue.queue]);
      return;
    }
    this._status$?.next('connected');
  }

  /** The route, schedules and pattern lines of one queue the server's patterns run on: its queue, or a partition. */
  private routingOf(queue: HandlerConfig): Required<Pick<EngineHandler, 'route' | 'schedules' | 'patterns'>> {
    const schedules: HandlerConfig[] = [];
    const patterns: PatternPolicyLine[] = [];
    const policies = new Map<string, RetryPolicy>();
    for (const [pattern, handler] of this.table) {
      const { policy, schedule } = handler.isEventHandler
        ? patternPolicy(pattern, policyExtras(pattern, chainOf(handler)), queue, this.options, this.moduleConfig)
        : { policy: queue, schedule: undefined };
      if (schedule) schedules.push(schedule);
      if (policy !== queue) patterns.push({ pattern, maxAttempts: policy.maxAttempts, delaysMs: policy.delaysMs });
      policies.set(pattern, policy);
    }
    return { route: this.router(queue, policies), schedules, patterns };
  }

  /**
   * Nest's getRouteFromPattern, once per pattern text: it JSON.parses the text, so a plain name throws and catches a
   * SyntaxError on every message (a fifth of the transport's CPU time in the bench's profile). A route no handler has
   * goes to the first handler whose topic wildcard matches it (an exact pattern wins). Kept only for texts that name a
   * handler, and at most ROUTE_CACHE_SIZE of them, since publishers choose the texts.
   */
  private routeOf(pattern: string): string {
    const cached = this.routes.get(pattern);
    if (cached !== undefined) return cached;
    // Nest reads the texts `null`, `true` and `false` as those values, which no handler's route is.
    const named: unknown = this.getRouteFromPattern(pattern);
    if (typeof named !== 'string') return pattern;
    const route = this.table.has(named) ? named : (this.wildcards.find((wildcard) => topicMatches(wildcard, named)) ?? named);
    // bounded in bytes too: padded or reordered spellings of one pattern map to its route, each under its own text
    if (this.table.has(route) && pattern.length <= ROUTE_CACHE_KEY_MAX && this.routes.size < ROUTE_CACHE_SIZE) this.routes.set(pattern, route);
    return route;
  }

  /** The router of deliveries from `queue`; it never throws: a pattern that cannot be read parks the message as malformed. */
  private router(queue: HandlerConfig, policies: ReadonlyMap<string, RetryPolicy>): DeliveryRouter {
    return (payload, message, deaths) => {
      let packet: InboundPacket;
      /**
       * The handler's own pattern, which metrics and traces are labelled with: a label per client spelling
       * (`{"cmd":  "sum"}`, `{"cmd":"sum"}`) would let any client grow /metrics without bound.
       */
      let own: string;
      try {
        // A body without the envelope is named by its publisher's key, which a retry's delivery no longer carries.
        const headers = message.properties.headers as Record<string, unknown> | undefined;
        const { routingKey } = firstRoute(headers, deaths, queue.queue, message.fields);
        const { replyTo, correlationId } = message.properties;
        packet = readPacket(payload, { routingKey, replyTo: replyTo as unknown, correlationId: correlationId as unknown }, patternAsString);
        own = this.routeOf(packet.pattern);
      } catch (error) {
        return { kind: 'park', reason: 'malformed', error: new Error(`the message's pattern cannot be read: ${errorMessage(error)}`) };
      }
      const replies = this.answers as RequestReplies; // made by start(), before any delivery
      const handler = this.table.get(own);
      if (!handler) {
        const error = new Error(`no handler for the pattern ${JSON.stringify(packet.pattern)} on "${queue.queue}"`);
        const request = packet.kind === 'request' ? packet : undefined;
        const notify = request ? () => replies.noHandler(request) : undefined;
        return { kind: 'park', reason: 'no-handler', error, notify };
      }
      const policy = policies.get(own) ?? queue;
      if (packet.kind === 'request') {
        const request = packet;
        // The handler's response stream (a failure becomes the stream's error, as in Nest's transports).
        const produce = (retry: RetryContext) => (signal: AbortSignal) => {
          const context = new RetryRmqContext(message, request.pattern, { ...retry, signal }, this.channelRef, request.metadata);
          context.answersCaller = true; // its handler's error is answered to the caller, not retried
          return this.processing(context, async (end) => this.transformToObservable(await handler(request.data, context)).pipe(finalize(end)));
        };
        return { kind: 'once', pattern: own, run: (retry) => replies.answer(request, produce(retry), retry.signal) };
      }
      const { pattern, data, metadata } = packet;
      // An event for a @MessagePattern runs once, as Nest runs it, with nobody to answer: a failure parks it.
      const once = handler.isEventHandler ? policy : { ...policy, maxAttempts: 1 };
      // The handler's context gets the pattern as sent (as Nest's RMQ transport gives it); observers get the handler's.
      const invoke = (d: unknown, retry: RetryContext) =>
        this.runEvent(handler, d, new RetryRmqContext(message, pattern, retry, this.channelRef, metadata));
      return { kind: 'handle', payload: data, policy: once, pattern: own, invoke };
    };
  }

  /** Runs an event handler through Nest's pipeline and waits for what it returned; rejects with the unwrapped error. */
  private async runEvent(handler: MessageHandler, data: unknown, context: RetryRmqContext): Promise<void> {
    try {
      await this.processing(context, async (end) => {
        try {
          const result: unknown = await handler(data, context);
          if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
        } finally {
          end();
        }
      });
    } catch (error) {
      throw unwrapRpcError(error);
    }
  }

  /** Sets the hook an instrumentation runs each handler call through (`done` runs the call), as on Nest's transports. */
  override setOnProcessingStartHook(hook: (transportId: Transport | symbol, context: unknown, done: () => Promise<unknown>) => void): void {
    super.setOnProcessingStartHook(hook);
    this.startHook = hook;
  }

  /** Sets the hook run once after each handler call and the stream it returned, as on Nest's transports. */
  override setOnProcessingEndHook(hook: (transportId: Transport | symbol, context: unknown) => void): void {
    super.setOnProcessingEndHook(hook);
    this.endHook = hook;
  }

  /**
   * Runs one handler call between Nest's processing hooks, as Nest's own transports do: the start hook gets the context
   * and runs the call through its `done` (inside its trace context, say), the end hook runs once, after the call and
   * the stream it returned. Without hooks set (Nest 10, or no instrumentation) the call runs as it is. A start hook
   * that never calls `done` never runs the call, as on Nest's transports.
   */
  private processing<T>(context: RetryRmqContext, fn: (end: () => void) => Promise<T>): Promise<T> {
    const { startHook, endHook, transportId } = this;
    let ended = false;
    // The call is over when the end hook runs: what the hook throws is logged, never the call's failure (a retry
    // would run a handler that succeeded again).
    const end = () => {
      if (ended || !endHook) return;
      ended = true;
      try {
        endHook(transportId as Transport | symbol, context);
      } catch (error) {
        this.routeLogger.warn(`Nest's processing end hook threw (${errorMessage(error)}); the handler's call stands`);
      }
    };
    if (!startHook) return fn(end);
    return new Promise<T>((resolve, reject) => {
      let running: Promise<T> | undefined;
      // Once: a hook that calls `done` again gets the same call, not a second run of the handler.
      const done = () => {
        if (running) return running;
        running = fn(end);
        running.then(resolve, reject);
        return running;
      };
      try {
        startHook(transportId as Transport | symbol, context, done);
      } catch (error) {
        reject(error instanceof Error ? error : new Error(errorMessage(error)));
      }
    }).catch((error: unknown) => {
      end();
      throw error;
    });
  }
}
