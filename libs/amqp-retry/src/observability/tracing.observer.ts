import type * as Otel from '@opentelemetry/api';
import { maskCredentials } from '../core/text/credentials.mask.js';
import { firstRoute } from '../core/delivery/first-failure.headers.js';
import type { DeliveryEvent, DeliveryScope, PublishingEvent, PublishScope, RetryObserver } from '../core/observe/retry.observer.js';
import type { TracingOptions } from '../core/observe/tracing.options.js';
import { DIRECT_REPLY_QUEUE, isDirectReplyAddress } from '../core/publish/reply-address.rules.js';

/** Reads W3C trace context out of AMQP headers (their values may come back as Buffers from some clients). */
const headerGetter: Otel.TextMapGetter<Record<string, unknown>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key];
    return Buffer.isBuffer(value) ? value.toString('utf8') : typeof value === 'string' ? value : undefined;
  },
};

const headerSetter: Otel.TextMapSetter<Record<string, unknown>> = { set: (carrier, key, value) => void (carrier[key] = value) };

/**
 * Traces with the OpenTelemetry API only (the application brings the SDK): the application's publishes get a
 * producer span whose W3C context (`traceparent`, `tracestate`) travels in the message headers; each attempt at a
 * delivery gets a consumer span, child of that context, current while the handler runs. Dead-lettering keeps the
 * headers, so every attempt of a retried message lands in the producer's trace; a message without trace context gets
 * its first failed attempt's in the copy sent to the tier or parked, so the later attempts land in that attempt's trace.
 * When the consumer span of the delivery that @opentelemetry/instrumentation-amqplib makes is current, it is given the
 * attempt's attributes instead of a second one.
 */
export class TracingObserver implements RetryObserver {
  private readonly tracer: Otel.Tracer;

  constructor(
    private readonly otel: typeof Otel,
    options: TracingOptions = {},
  ) {
    this.tracer = otel.trace.getTracer(options.tracerName ?? 'nestjs-amqp-retry');
  }

  publishing(e: PublishingEvent): PublishScope | void {
    // Parked copies and forwarded delayed messages keep the context they were published with.
    if (e.kind !== 'publish' && e.kind !== 'delayed') return;
    const { trace, context, propagation, SpanKind } = this.otel;
    // A reply to a direct reply-to address: each caller's address is unique, so spans are named by the pseudo-queue.
    const reply = e.exchange === '' && isDirectReplyAddress(e.routingKey);
    const routingKey = reply ? DIRECT_REPLY_QUEUE : e.routingKey;
    const destination = [e.exchange, routingKey].filter((part) => part !== '').join(':');
    const span = this.tracer.startSpan(`publish ${destination || '(default)'}`, {
      kind: SpanKind.PRODUCER,
      attributes: {
        'messaging.system': 'rabbitmq',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'publish',
        'messaging.destination.name': destination,
        'messaging.rabbitmq.destination.routing_key': routingKey,
        ...(reply && { 'messaging.destination.temporary': true }),
        ...(e.messageId !== undefined && { 'messaging.message.id': e.messageId }),
        ...(e.kind === 'delayed' && { 'amqp_retry.delayed': true }),
      },
    });
    const active = trace.setSpan(context.active(), span);
    propagation.inject(active, e.headers, headerSetter);
    return this.around(span, active);
  }

  deliveryStarted(e: DeliveryEvent): DeliveryScope {
    const { trace, context, propagation, SpanKind, SpanStatusCode, ROOT_CONTEXT } = this.otel;
    const { fields, properties } = e.message;
    const headers = (properties.headers ?? {}) as Record<string, unknown>;
    const producer = propagation.extract(ROOT_CONTEXT, headers, headerGetter);
    // A retry comes back by the library's own exchange and tier: name where the message was first published instead.
    const { exchange, routingKey } = firstRoute(headers, e.deaths, e.queue, fields);
    const attributes: Otel.Attributes = {
      'messaging.system': 'rabbitmq',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': [exchange, routingKey, e.queue].filter((part) => part !== '').join(':'),
      'messaging.rabbitmq.destination.routing_key': routingKey,
      'messaging.rabbitmq.message.delivery_tag': fields.deliveryTag,
      'amqp_retry.queue': e.queue,
      'amqp_retry.attempt': e.attempt,
      'amqp_retry.max_attempts': e.maxAttempts,
      ...(properties.messageId !== undefined && { 'messaging.message.id': String(properties.messageId) }),
      ...(e.pattern !== undefined && { 'amqp_retry.pattern': e.pattern }),
    };
    const current = trace.getSpan(context.active());
    const producerTrace = trace.getSpanContext(producer)?.traceId;
    if (current?.isRecording() && producerTrace !== undefined && current.spanContext().traceId === producerTrace) {
      current.setAttributes(attributes);
      return { end: (error?: unknown) => error !== undefined && fail(current, error, SpanStatusCode.ERROR) };
    }
    const span = this.tracer.startSpan(`process ${e.queue}`, { kind: SpanKind.CONSUMER, attributes }, producer);
    const active = trace.setSpan(producer, span);
    const scope = this.around(span, active);
    if (producerTrace !== undefined) return scope;
    // A message without trace context of its own (plain amqplib, Nest's ClientRMQ): its parked copy carries the context
    // of the attempt that failed. Its retries go back by a nack, which adds no header: each attempt is a trace of its
    // own, told apart by messaging.message.id and amqp_retry.attempt.
    return { ...scope, carry: (copy) => propagation.inject(active, copy, headerSetter) };
  }

  /** The span's scope: calls run in its context; it ends with the error, if any. */
  private around(span: Otel.Span, active: Otel.Context): DeliveryScope & PublishScope {
    return {
      run: (fn) => this.otel.context.with(active, fn),
      end: (error?: unknown) => {
        if (error !== undefined) fail(span, error, this.otel.SpanStatusCode.ERROR);
        span.end();
      },
    };
  }
}

function fail(span: Otel.Span, error: unknown, status: Otel.SpanStatusCode): void {
  const exception = error instanceof Error ? error : new Error(String(error));
  // A trace leaves the process: the texts are masked as the logs are.
  const message = maskCredentials(exception.message);
  span.recordException({ name: exception.name, message, stack: exception.stack === undefined ? undefined : maskCredentials(exception.stack) });
  span.setStatus({ code: status, message });
  span.setAttribute('error.type', exception.constructor.name);
}
