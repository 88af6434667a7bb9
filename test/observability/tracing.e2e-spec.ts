import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { NonRetryableError, RetryPublisher } from 'nestjs-amqp-retry';
import { RetryClient, RetryServer } from 'nestjs-amqp-retry/transport';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { patternTiers, startRetryMicroservice } from '../transport/transport-app.js';
import { installTracing, parentOf } from '../support/tracing.js';
import { useSuite } from '../support/suite.js';

describe('OpenTelemetry tracing', () => {
  let tracing: ReturnType<typeof installTracing>;
  const suite = useSuite('obs.trace', { afterAll: () => tracing?.uninstall() });
  beforeAll(() => {
    tracing = installTracing();
  });
  beforeEach(() => tracing.exporter.reset());

  it("puts every attempt of a retried message in the producer's trace, as child spans, current in the handler", async () => {
    const { queue } = suite;
    const Handler = handlerFor({ queue, delays: ['100ms'], maxAttempts: 3 }, async (_payload, ctx) => {
      await trace.getTracer('test').startActiveSpan(`user work ${ctx.attempt}`, async (span) => {
        span.end();
      });
      if (ctx.attempt < 3) throw new Error(`attempt ${ctx.attempt} fails`);
    });
    const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, tracing: true }));
    const publisher = app.get(RetryPublisher);
    const root = trace.getTracer('test').startSpan('request');
    await context.with(trace.setSpan(context.active(), root), () => publisher.publish('', queue, { n: 1 }, { messageId: 'm-1' }));
    root.end();
    await waitFor(() => handlerOf(app, Handler).calls.length === 3, 'three attempts', 15_000);
    await waitFor(() => tracing.spans().filter((s) => s.kind === SpanKind.CONSUMER).length === 3, 'three consumer spans');

    const spans = tracing.spans();
    const producer = spans.find((s) => s.kind === SpanKind.PRODUCER);
    expect(producer?.name).toBe(`publish ${queue}`);
    expect(parentOf(producer!)).toBe(root.spanContext().spanId);
    expect(producer?.attributes).toMatchObject({
      'messaging.system': 'rabbitmq',
      'messaging.destination.name': queue,
      'messaging.rabbitmq.destination.routing_key': queue,
      'messaging.message.id': 'm-1',
    });
    const traceId = root.spanContext().traceId;
    const consumers = spans
      .filter((s) => s.kind === SpanKind.CONSUMER)
      .sort((a, b) => Number(a.attributes['amqp_retry.attempt']) - Number(b.attributes['amqp_retry.attempt']));
    expect(consumers.map((s) => s.attributes['amqp_retry.attempt'])).toEqual([1, 2, 3]);
    for (const span of consumers) {
      expect(span.spanContext().traceId).toBe(traceId);
      expect(parentOf(span)).toBe(producer?.spanContext().spanId);
      expect(span.name).toBe(`process ${queue}`);
      expect(span.attributes).toMatchObject({
        'messaging.system': 'rabbitmq',
        'messaging.operation.type': 'process',
        'messaging.destination.name': `${queue}:${queue}`,
        'messaging.rabbitmq.destination.routing_key': queue,
        'messaging.message.id': 'm-1',
        'amqp_retry.max_attempts': 3,
      });
    }
    expect(consumers.map((s) => s.status.code)).toEqual([SpanStatusCode.ERROR, SpanStatusCode.ERROR, SpanStatusCode.UNSET]);
    expect(consumers[0].events.map((e) => e.name)).toEqual(['exception']);
    // The handler's own spans are children of the attempt that ran them.
    for (const [i, consumer] of consumers.entries()) {
      const work = spans.find((s) => s.name === `user work ${i + 1}`);
      expect(parentOf(work!)).toBe(consumer.spanContext().spanId);
      expect(work?.spanContext().traceId).toBe(traceId);
    }
    // The header the attempts read is the producer's.
    const traceparent = handlerOf(app, Handler).calls[2].properties.headers?.traceparent as string;
    expect(traceparent).toBe(`00-${traceId}-${producer?.spanContext().spanId}-01`);
  });

  it("gives each request's handler call a consumer span, with the handler's pattern and an error status when it failed", async () => {
    const { queue } = suite;
    suite.extraQueues.push(...patternTiers(queue));
    const client = new RetryClient({ url: AMQP_URL, delayedDelivery: false, queue, tracing: true });
    suite.clients.push(client);
    suite.app = await startRetryMicroservice({ queue, tracing: true });
    await firstValueFrom(client.send('order.get', { id: 1 }));
    await expect(firstValueFrom(client.send('order.get', { id: -1 }))).rejects.toMatchObject({ message: 'no order -1' });
    await waitFor(() => tracing.spans().filter((s) => s.kind === SpanKind.CONSUMER).length === 2, 'two consumer spans');
    const consumers = tracing.spans().filter((s) => s.kind === SpanKind.CONSUMER);
    expect(
      consumers.map((s) => [s.attributes['amqp_retry.pattern'], s.attributes['amqp_retry.attempt'], s.attributes['amqp_retry.max_attempts']]),
    ).toEqual([
      ['order.get', 1, 1],
      ['order.get', 1, 1],
    ]);
    expect(consumers.map((s) => s.status.code)).toEqual([SpanStatusCode.UNSET, SpanStatusCode.ERROR]);
  });

  it.each(['classic', 'quorum'] as const)(
    'retries a message published without trace context by a nack, as without tracing: each attempt a span with its message id (%s)',
    async (queueType) => {
      const { broker, queue } = suite;
      const Handler = handlerFor({ queue, queueType, delays: ['100ms'], maxAttempts: 3 }, (_payload, ctx) => {
        if (ctx.attempt < 3) throw new Error(`attempt ${ctx.attempt} fails`);
      });
      const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, tracing: true }));
      // Plain amqplib, as Nest's ClientRMQ publishes: no traceparent.
      await broker.publish('', queue, { n: 1 }, { messageId: 'plain-1' });
      await waitFor(() => handlerOf(app, Handler).calls.length === 3, 'three attempts', 15_000);
      await waitFor(() => tracing.spans().filter((s) => s.kind === SpanKind.CONSUMER).length === 3, 'three consumer spans');

      // The observer changes nothing of the message: no trace context and no header of a published copy on the retries.
      for (const call of handlerOf(app, Handler).calls.slice(1)) {
        const headers = call.properties.headers ?? {};
        expect(headers.traceparent).toBeUndefined();
        expect(Object.keys(headers).filter((name) => name.startsWith('x-retry-'))).toEqual([]);
      }
      const consumers = tracing
        .spans()
        .filter((s) => s.kind === SpanKind.CONSUMER)
        .sort((a, b) => Number(a.attributes['amqp_retry.attempt']) - Number(b.attributes['amqp_retry.attempt']));
      expect(consumers.map((s) => [s.attributes['amqp_retry.attempt'], s.attributes['messaging.message.id']])).toEqual([
        [1, 'plain-1'],
        [2, 'plain-1'],
        [3, 'plain-1'],
      ]);
      // Each attempt names where the message was published, not the tier it came back by.
      expect(consumers.map((s) => s.attributes['messaging.destination.name'])).toEqual([1, 2, 3].map(() => `${queue}:${queue}`));
    },
  );

  it('gives the parked copy of a message without trace context the trace of the attempt that failed', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue }, () => {
      throw new NonRetryableError('refused');
    });
    suite.app = await startApp([Handler], { ...TEST_OPTIONS, tracing: true });
    await broker.publish('', queue, { n: 1 });
    const [parked] = await broker.take(`${queue}.error`, 1);
    const consumer = tracing.spans().find((s) => s.kind === SpanKind.CONSUMER);
    expect(parked.properties.headers?.traceparent).toBe(`00-${consumer?.spanContext().traceId}-${consumer?.spanContext().spanId}-01`);
  });

  it('keeps the trace context through parking and through the delay ladder', async () => {
    const { broker, queue } = suite;
    const prefix = suite.ladder();
    const Handler = handlerFor({ queue }, (payload) => {
      if ((payload as { bad?: boolean }).bad) throw new NonRetryableError('refused');
    });
    suite.app = await startApp([Handler], { ...TEST_OPTIONS, delayedDelivery: { prefix }, tracing: true });
    const publisher = suite.app.get(RetryPublisher);
    await publisher.publish('', queue, { bad: true });
    const [parked] = await broker.take(`${queue}.error`, 1);
    const parkProducer = tracing.spans().find((s) => s.kind === SpanKind.PRODUCER);
    expect(parked.properties.headers?.traceparent).toBe(`00-${parkProducer?.spanContext().traceId}-${parkProducer?.spanContext().spanId}-01`);

    tracing.exporter.reset();
    await publisher.publish('', queue, { bad: false }, { delay: '200ms' });
    await waitFor(() => tracing.spans().some((s) => s.kind === SpanKind.CONSUMER), 'the delayed delivery', 10_000);
    const producer = tracing.spans().find((s) => s.kind === SpanKind.PRODUCER);
    const consumer = tracing.spans().find((s) => s.kind === SpanKind.CONSUMER);
    expect(producer?.attributes['amqp_retry.delayed']).toBe(true);
    expect(consumer?.spanContext().traceId).toBe(producer?.spanContext().traceId);
    expect(parentOf(consumer!)).toBe(producer?.spanContext().spanId);
  });

  it("puts RetryClient.send's request, its handling and its replies in the caller's trace, the spans named by queue, not by reply address", async () => {
    const { queue } = suite;
    const server = new RetryServer({ url: AMQP_URL, queue, delays: [100], maxAttempts: 2, delayedDelivery: false, tracing: true });
    suite.clients.push(server);
    const seen: Array<string | undefined> = [];
    server.addHandler(
      'sum',
      async (data: { a: number; b: number }) => {
        seen.push(trace.getActiveSpan()?.spanContext().spanId);
        return data.a + data.b;
      },
      false,
    );
    await new Promise<void>((resolve, reject) => void server.listen((error) => (error ? reject(error) : resolve())));
    const client = new RetryClient({ url: AMQP_URL, queue, delayedDelivery: false, tracing: true });
    suite.clients.push(client);
    await client.connect();
    const caller = trace.getTracer('test').startSpan('caller');
    for (const n of [1, 2]) {
      const answer = context.with(trace.setSpan(context.active(), caller), () => lastValueFrom(client.send('sum', { a: n, b: 2 })));
      expect(await answer).toBe(n + 2);
    }
    caller.end();
    // Each request: its producer span, its consumer span, two replies (the value, then the end of the stream).
    await waitFor(() => tracing.spans().filter((s) => s.kind !== SpanKind.INTERNAL).length === 8, 'the spans of two requests');

    const spans = tracing.spans();
    const traceId = caller.spanContext().traceId;
    expect(spans.map((s) => s.spanContext().traceId)).toEqual(spans.map(() => traceId));
    const requests = spans.filter((s) => s.kind === SpanKind.PRODUCER && parentOf(s) === caller.spanContext().spanId);
    expect(requests.map((s) => s.name)).toEqual([`publish ${queue}`, `publish ${queue}`]);
    const handlings = spans.filter((s) => s.kind === SpanKind.CONSUMER);
    expect(handlings.map((s) => s.name)).toEqual([`process ${queue}`, `process ${queue}`]);
    expect(handlings.map((s) => parentOf(s))).toEqual(requests.map((s) => s.spanContext().spanId));
    expect(handlings[0].attributes).toMatchObject({ 'amqp_retry.pattern': 'sum', 'amqp_retry.queue': queue });
    expect(seen).toEqual(handlings.map((s) => s.spanContext().spanId)); // current in the handler
    const replies = spans.filter((s) => s.kind === SpanKind.PRODUCER && !requests.includes(s));
    expect(new Set(replies.map((s) => s.name))).toEqual(new Set(['publish amq.rabbitmq.reply-to']));
    expect(replies.map((s) => parentOf(s)).sort()).toEqual(handlings.flatMap((s) => [s.spanContext().spanId, s.spanContext().spanId]).sort());
  });

  it('adds nothing to a retried message without trace context when tracing is off', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, delays: ['100ms'], maxAttempts: 2 }, (_payload, ctx) => {
      if (ctx.attempt === 1) throw new Error('first attempt fails');
    });
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    await broker.publish('', queue, { n: 1 });
    await waitFor(() => handlerOf(app, Handler).calls.length === 2, 'two attempts', 15_000);
    const headers = handlerOf(app, Handler).calls[1].properties.headers ?? {};
    expect(headers.traceparent).toBeUndefined();
    expect(Object.keys(headers).filter((name) => name.startsWith('x-retry-'))).toEqual([]);
  });

  it('adds nothing to the headers when tracing is off', async () => {
    const { queue } = suite;
    const Handler = handlerFor({ queue }, () => undefined);
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    const root = trace.getTracer('test').startSpan('request');
    await context.with(trace.setSpan(context.active(), root), () => app.get(RetryPublisher).publish('', queue, {}));
    root.end();
    await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the delivery');
    expect(handlerOf(app, Handler).calls[0].properties.headers?.traceparent).toBeUndefined();
    expect(tracing.spans().map((s) => s.name)).toEqual(['request']);
  });
});
