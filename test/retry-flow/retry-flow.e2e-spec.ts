import { NonRetryableError, RetryPublisher, retryTopologyNames } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

describe('retry flow on a real broker', () => {
  const suite = useSuite('e2e.flow');
  let exchange: string;

  beforeEach(() => {
    exchange = uniqueName('e2e.shop');
    suite.extraExchanges.push(exchange);
  });

  it('acks a successful message once: one handler call, nothing left in any queue', async () => {
    const Handler = handlerFor({ queue: suite.queue, exchange: exchange, routingKey: 'order.created', delays: [200] }, () => undefined);
    suite.app = await startApp([Handler]);
    await suite.app.get(RetryPublisher).publish(exchange, 'order.created', { id: 1 });

    const handler = handlerOf(suite.app, Handler);
    await waitFor(() => handler.calls.length === 1, 'the handler call');
    await suite.app.close();
    suite.app = undefined;
    expect(handler.calls.map((c) => [c.payload, c.attempt])).toEqual([[{ id: 1 }, 1]]);
    expect(await suite.broker.count(suite.queue)).toBe(0); // acked: not back in the queue after the consumer stopped
    expect(await suite.broker.count(retryTopologyNames(suite.queue, { delays: [200] }).tiers[0])).toBe(0);
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
  });

  it('resolves a publish with what it sent, the handler getting the same id and the basic properties given', async () => {
    const Handler = handlerFor({ queue: suite.queue, exchange, routingKey: 'order.created', delays: [200] }, () => undefined);
    suite.app = await startApp([Handler]);
    const at = new Date('2030-01-02T03:04:05.678Z');
    const options = { correlationId: 'req-7', replyTo: 'billing.answers', type: 'order.created.v2', appId: 'shop', timestamp: at };
    const sent = await suite.app.get(RetryPublisher).publish(exchange, 'order.created', { id: 2 }, options);
    expect(sent).toMatchObject({ exchange, routingKey: 'order.created', delayMs: 0 });
    expect(sent.messageId).toMatch(/^[0-9a-f-]{36}$/);
    const handler = handlerOf(suite.app, Handler);
    await waitFor(() => handler.calls.length === 1, 'the handler call');
    expect(handler.calls[0].properties).toMatchObject({
      messageId: sent.messageId,
      correlationId: 'req-7',
      replyTo: 'billing.answers',
      type: 'order.created.v2',
      appId: 'shop',
      timestamp: Math.floor(at.getTime() / 1000),
    });
    const given = await suite.app.get(RetryPublisher).publish(exchange, 'order.created', { id: 3 }, { messageId: 'order-3' });
    expect(given.messageId).toBe('order-3');
    await expect(suite.app.get(RetryPublisher).publish(exchange, 'order.created', { id: 4 }, { timestamp: new Date('no date') })).rejects.toThrow(
      TypeError,
    );
    await waitFor(() => handler.calls.length === 2, 'the second call');
  });

  it('retries after each tier delay with attempts 1, 2, 3 and parks when attempts run out', async () => {
    const delays = [300, 600];
    const Handler = handlerFor({ queue: suite.queue, exchange: exchange, routingKey: 'order.*', delays, maxAttempts: 4 }, (_, ctx) => {
      throw new Error(`payment declined on attempt ${ctx.attempt}`);
    });
    suite.app = await startApp([Handler]);
    const body = Buffer.from('{"id":7,"note":"héllo"}');
    await suite.broker.publish(exchange, 'order.created', body, { messageId: 'm-7', correlationId: 'c-7', headers: { tenant: 'acme' } });

    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1);
    const calls = handlerOf(suite.app, Handler).calls;
    expect(calls.map((c) => [c.attempt, c.isLastAttempt])).toEqual([
      [1, false],
      [2, false],
      [3, false],
      [4, true],
    ]);
    const gaps = calls.slice(1).map((c, i) => c.at - calls[i].at);
    const expected = [300, 600, 600]; // the last tier repeats
    gaps.forEach((gap, i) => {
      expect(gap).toBeGreaterThanOrEqual(expected[i] - 5); // timer granularity of two clocks
      expect(gap).toBeLessThan(expected[i] + 250);
    });

    expect(parked.content.equals(body)).toBe(true);
    expect(parked.properties).toMatchObject({ messageId: 'm-7', correlationId: 'c-7', contentType: 'application/json', deliveryMode: 2 });
    const headers = parked.properties.headers ?? {};
    expect(headers).toMatchObject({
      tenant: 'acme',
      'x-parked-reason': 'exhausted',
      'x-exception-message': 'payment declined on attempt 4',
      'x-original-exchange': exchange,
      'x-original-routing-key': 'order.created',
      'x-retry-attempts': 4,
    });
    expect(headers['x-exception-stack']).toMatch(/^Error: payment declined on attempt 4\n\s+at /);
    expect(Date.now() - Date.parse(headers['x-parked-at'] as string)).toBeLessThan(5_000);
    expect(headers['x-death']).toBeUndefined(); // moved, so that a replayed copy starts afresh
    const deaths = headers['x-retry-death-history'] as unknown as Array<Record<string, unknown>>;
    expect(deaths.find((d) => d.queue === suite.queue && d.reason === 'rejected')?.count).toBe(3);
    expect(await suite.broker.count(suite.queue)).toBe(0);
  });

  it('gives a sibling queue bound with the same key exactly one copy while the handler retries', async () => {
    const sibling = `${suite.queue}.sibling`;
    suite.extraQueues.push(sibling);
    const Handler = handlerFor({ queue: suite.queue, exchange: exchange, exchangeType: 'fanout', delays: [100], maxAttempts: 3 }, (_, ctx) => {
      if (ctx.attempt < 3) throw new Error('not yet');
    });
    suite.app = await startApp([Handler]);
    await suite.broker.declareQueue(sibling, { exchange: exchange, key: '' });
    await suite.broker.publish(exchange, 'anything', { id: 3 });

    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 3, 'the third attempt');
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'the acked message');
    expect(await suite.broker.count(sibling)).toBe(1);
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
  });

  it('parks a NonRetryableError at once, after one call', async () => {
    const Handler = handlerFor({ queue: suite.queue, exchange: exchange, delays: [100] }, () => {
      throw new NonRetryableError('unknown customer');
    });
    suite.app = await startApp([Handler]);
    await suite.broker.publish(exchange, 'x', { id: 4 });

    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1);
    expect(handlerOf(suite.app, Handler).calls).toHaveLength(1);
    expect(parked.properties.headers).toMatchObject({
      'x-parked-reason': 'non-retryable',
      'x-exception-message': 'unknown customer',
      'x-retry-attempts': 1,
      'x-original-routing-key': 'x',
    });
  });

  it('parks errors matched by nonRetryable classes and retries the others', async () => {
    class Declined extends Error {}
    const Handler = handlerFor(
      { queue: suite.queue, exchange: exchange, delays: [100], maxAttempts: 3, nonRetryable: [Declined] },
      (payload, ctx) => {
        if ((payload as { kind: string }).kind === 'declined') throw new Declined('card declined');
        if (ctx.attempt === 1) throw new Error('timeout');
      },
    );
    suite.app = await startApp([Handler]);
    await suite.broker.publish(exchange, 'x', { kind: 'declined' });
    await suite.broker.publish(exchange, 'x', { kind: 'flaky' });

    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'non-retryable', 'x-exception-message': 'card declined' });
    const handler = handlerOf(suite.app, Handler);
    await waitFor(() => handler.calls.filter((c) => (c.payload as { kind: string }).kind === 'flaky').length === 2, 'the flaky retry');
    expect(handler.calls.map((c) => `${(c.payload as { kind: string }).kind}:${c.attempt}`).sort()).toEqual(['declined:1', 'flaky:1', 'flaky:2']);
  });

  it('parks a malformed body without calling the handler, and keeps consuming', async () => {
    const Handler = handlerFor({ queue: suite.queue, exchange: exchange, delays: [100] }, () => undefined);
    suite.app = await startApp([Handler]);
    const garbage = Buffer.from('{"id": 5,');
    await suite.broker.publish(exchange, 'k', garbage, { messageId: 'bad' });
    await suite.broker.publish(exchange, 'k', { id: 6 });

    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1);
    expect(parked.content.equals(garbage)).toBe(true);
    expect(parked.properties.messageId).toBe('bad');
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'malformed', 'x-retry-attempts': 0 });
    expect(parked.properties.headers?.['x-exception-message']).toMatch(/^body is not valid JSON: /);
    const handler = handlerOf(suite.app, Handler);
    await waitFor(() => handler.calls.length === 1, 'the valid message');
    expect(handler.calls[0].payload).toEqual({ id: 6 });
  });

  it('works without an exchange: publish to the queue by name', async () => {
    const Handler = handlerFor({ queue: suite.queue, delays: [100] }, (_, ctx) => {
      if (ctx.attempt === 1) throw new Error('once');
    });
    suite.app = await startApp([Handler]);
    await suite.app.get(RetryPublisher).publish('', suite.queue, { id: 8 });
    const handler = handlerOf(suite.app, Handler);
    await waitFor(() => handler.calls.length === 2, 'the retry');
    expect(handler.calls.map((c) => c.attempt)).toEqual([1, 2]);
  });
});
