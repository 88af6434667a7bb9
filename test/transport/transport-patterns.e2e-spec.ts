import {
  BadRequestException,
  Controller,
  Injectable,
  Module,
  UseGuards,
  UseInterceptors,
  UsePipes,
  type CallHandler,
  type CanActivate,
  type ExecutionContext,
  type INestMicroservice,
  type NestInterceptor,
  type PipeTransform,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { retryTopologyNames } from 'nestjs-amqp-retry';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { RetryClient, RetryRmqContext, RetryRpcExceptionFilter, RetryServer } from 'nestjs-amqp-retry/transport';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { OrdersController, patternTiers, startRetryMicroservice } from './transport-app.js';

@Controller()
class FirstOfTwoController {
  readonly attempts: number[] = [];

  @EventPattern<string>('twice')
  first(@Payload() _data: unknown, @Ctx() ctx: RetryRmqContext): void {
    this.attempts.push(ctx.getRetryContext().attempt);
  }
}

@Controller()
class SecondOfTwoController {
  @EventPattern<string>('twice', { retry: { delays: [100], maxAttempts: 5 } })
  second(): void {
    throw new Error('always fails');
  }
}

/** Two handlers of one pattern (Nest chains them): only the second gives the pattern a retry policy. */
@Module({ controllers: [FirstOfTwoController, SecondOfTwoController] })
class TwoHandlersModule {}

@Controller()
class NextVersionController {
  readonly attempts: Array<{ id: number; attempt: number }> = [];

  @EventPattern<string>('order.created', { retry: { delays: [500], maxAttempts: 2 } })
  created(@Payload() order: { id: number }, @Ctx() ctx: RetryRmqContext): void {
    this.attempts.push({ id: order.id, attempt: ctx.getRetryContext().attempt });
    throw new Error('the next version fails too');
  }
}

/** order.created with another policy than OrdersController's (3 attempts, 200 ms): a rolling deploy's other half. */
@Module({ controllers: [NextVersionController] })
class NextVersionModule {}

@Injectable()
class DenyGuard implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

class RejectingPipe implements PipeTransform {
  transform(): never {
    throw new BadRequestException('id must be a number');
  }
}

/** What an interceptor sees as the RPC context: the transport's, with the attempt. */
@Injectable()
class AttemptInterceptor implements NestInterceptor {
  static seen: Array<{ isRetryContext: boolean; attempt?: number }> = [];
  intercept(context: ExecutionContext, next: CallHandler) {
    const ctx: unknown = context.switchToRpc().getContext();
    AttemptInterceptor.seen.push({
      isRetryContext: ctx instanceof RetryRmqContext,
      attempt: ctx instanceof RetryRmqContext ? ctx.getRetryContext().attempt : undefined,
    });
    return next.handle();
  }
}

@Controller()
class PipelineController {
  called = 0;

  @UseGuards(DenyGuard)
  @EventPattern<string>('guarded')
  guarded(): void {
    this.called++;
  }

  @UsePipes(RejectingPipe)
  @EventPattern<string>('validated')
  validated(@Payload() _data: unknown): void {
    this.called++;
  }

  @UseInterceptors(AttemptInterceptor)
  @EventPattern<string>('intercepted')
  intercepted(@Payload() _data: unknown, @Ctx() ctx: RetryRmqContext): void {
    if (ctx.getRetryContext().attempt === 1) throw new Error('first attempt fails');
  }
}

@Module({ controllers: [PipelineController], providers: [DenyGuard, AttemptInterceptor] })
class PipelineModule {}

@Controller()
class LongDelayController {
  readonly at: number[] = [];

  @EventPattern<string>('order.audited', { retry: { delays: [1500], maxAttempts: 2 } })
  audited(@Ctx() ctx: RetryRmqContext): void {
    this.at.push(Date.now());
    if (ctx.getRetryContext().attempt === 1) throw new Error('first attempt fails');
  }
}

@Module({ controllers: [LongDelayController] })
class LongDelayModule {}

@Controller()
class WildcardController {
  readonly calls: Array<{ handler: string; pattern: string; attempt: number }> = [];

  @EventPattern<string>('order.*', { retry: { delays: [100], maxAttempts: 3 } })
  anyOrder(@Payload() order: { failures: number }, @Ctx() ctx: RetryRmqContext): void {
    this.calls.push({ handler: 'order.*', pattern: ctx.getPattern(), attempt: ctx.getRetryContext().attempt });
    if (ctx.getRetryContext().attempt <= order.failures) throw new Error('fails');
  }

  @EventPattern<string>('order.paid')
  paid(@Ctx() ctx: RetryRmqContext): void {
    this.calls.push({ handler: 'order.paid', pattern: ctx.getPattern(), attempt: ctx.getRetryContext().attempt });
  }

  @MessagePattern('stock.#')
  stock(@Ctx() ctx: RetryRmqContext): { pattern: string } {
    return { pattern: ctx.getPattern() };
  }
}

/** Topic wildcards (the server's own schedule is 1 attempt), an exact pattern beside one, and a request. */
@Module({ controllers: [WildcardController] })
class WildcardModule {}

describe("transport patterns: routing, schedules of their own, Nest's pipeline and several versions of one pattern", () => {
  const suite = useSuite<INestMicroservice>('e2e.transport.patterns', {
    extraQueues: (queue) => [
      ...patternTiers(queue),
      ...retryTopologyNames(queue, { delays: [100] }).tiers,
      ...retryTopologyNames(queue, { delays: [500] }).tiers,
      ...retryTopologyNames(queue, { delays: [1500] }).tiers,
    ],
  });

  const calls = (pattern: string) => suite.app!.get(OrdersController).calls.filter((c) => c.pattern === pattern);

  it('routes a body without the envelope by the key it was published with on every attempt, not by the tier that sent it back', async () => {
    const exchange = uniqueName('e2e.transport.patterns.x');
    suite.extraExchanges.push(exchange);
    suite.app = await startRetryMicroservice({ queue: suite.queue, exchange }, { passErrorsThrough: true });
    // order.paid retries on the queue's schedule (a nack), order.created on its own (the first failure is moved)
    await suite.broker.publish(exchange, 'order.paid', { id: 1, failures: 1 });
    await suite.broker.publish(exchange, 'order.created', { id: 2, failures: 1 });
    await waitFor(() => calls('order.paid').length === 2 && calls('order.created').length === 2, 'both retried once', 15_000);
    expect(calls('order.paid').map((c) => c.attempt)).toEqual([1, 2]);
    expect(calls('order.created').map((c) => c.attempt)).toEqual([1, 2]);
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
  });

  it('retries patterns with schedules of their own on a quorum queue, then parks with their attempts', async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue, queueType: 'quorum' }, { passErrorsThrough: true });
    await suite.broker.publish('', suite.queue, { pattern: 'order.created', data: { id: 1, failures: 1 } });
    await suite.broker.publish('', suite.queue, { pattern: 'order.shipped', data: { id: 2, failures: 99 } });
    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1, 15_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 4 });
    expect(calls('order.created').map((c) => c.attempt)).toEqual([1, 2]);
    expect(calls('order.shipped').map((c) => c.attempt)).toEqual([1, 2, 3, 4]);
  });

  it('binds no pattern longer than a routing key may be, and a client cannot publish one, without breaking the next emit', async () => {
    const exchange = uniqueName('e2e.transport.patterns.x');
    suite.extraExchanges.push(exchange);
    suite.app = await startRetryMicroservice({ queue: suite.queue, exchange }, { passErrorsThrough: true });
    const client = new RetryClient({ url: AMQP_URL, exchange, delayedDelivery: false });
    try {
      await expect(lastValueFrom(client.emit('p'.repeat(300), { id: 1 }), { defaultValue: undefined })).rejects.toThrow();
      await lastValueFrom(client.emit('order.paid', { id: 2 }), { defaultValue: undefined });
      await lastValueFrom(client.emit({ cmd: 'sum' }, [1, 2]), { defaultValue: undefined });
    } finally {
      await client.close();
    }
    await waitFor(() => calls('order.paid').length === 1, 'the emit after the refused one');
  });

  it('ignores a first-failure header on a message that never waited in a tier: it costs no attempt', async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue, maxAttempts: 1 });
    const forged = { 'x-retry-first-failure': suite.queue, 'x-retry-first-exchange': '', 'x-retry-first-routing-key': 'order.created' };
    await suite.broker.publish('', suite.queue, { pattern: 'order.paid', data: { id: 1 } }, { headers: forged });
    await waitFor(() => calls('order.paid').length === 1, 'the handler to run once', 5_000);
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'the message acked');
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
  });

  it('parks an event for a @MessagePattern handler that fails, rather than dropping it', async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue }, { passErrorsThrough: true });
    await suite.broker.publish('', suite.queue, { pattern: 'order.get', data: { id: -1 } }); // an event: no id, no replyTo
    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1, 10_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 1 });
    expect(JSON.parse(parked.content.toString())).toEqual({ pattern: 'order.get', data: { id: -1 } });
  });

  it('parks each message once when two versions with different policies for a pattern share the queue', async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue }, { passErrorsThrough: true });
    const next = new RetryServer({ url: AMQP_URL, queue: suite.queue, delays: [300], maxAttempts: 2, delayedDelivery: false });
    const other = await NestFactory.createMicroservice(NextVersionModule, { strategy: next, logger: ['error'] });
    other.useGlobalFilters(new RetryRpcExceptionFilter());
    await other.listen();
    try {
      const ids = [1, 2, 3, 4, 5, 6];
      for (const id of ids) await suite.broker.publish('', suite.queue, { pattern: 'order.created', data: { id, failures: 99 } });
      const parked = await suite.broker.take(`${suite.queue}.error`, ids.length, 20_000);
      const parkedIds = parked.map((m) => (JSON.parse(m.content.toString()) as { data: { id: number } }).data.id).sort();
      expect(parkedIds).toEqual(ids);
      const attempts = [...calls('order.created'), ...other.get(NextVersionController).attempts.map((a) => ({ data: { id: a.id }, ...a }))];
      expect(calls('order.created').length).toBeGreaterThan(0); // both versions took part
      expect(other.get(NextVersionController).attempts.length).toBeGreaterThan(0);
      for (const id of ids) {
        const mine = attempts
          .filter((a) => (a.data as { id: number }).id === id)
          .map((a) => a.attempt)
          .sort();
        expect(mine[0]).toBe(1);
        expect(mine).toEqual(mine.map((_, i) => i + 1)); // 1, 2, ... without a gap or a repeat
        expect(mine.length).toBeLessThanOrEqual(3);
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // a duplicate would be parked by now
      expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
    } finally {
      await other.close();
    }
    for (const tier of [...patternTiers(suite.queue), ...retryTopologyNames(suite.queue, { delays: [500] }).tiers])
      expect(await suite.broker.count(tier)).toBe(0);
  });

  it("runs Nest's pipeline: a denying guard and a rejecting pipe park after the attempts, interceptors see the retry context", async () => {
    AttemptInterceptor.seen = [];
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, delays: [100], maxAttempts: 2, delayedDelivery: false });
    suite.app = await NestFactory.createMicroservice(PipelineModule, { strategy: server, logger: false });
    suite.app.useGlobalFilters(new RetryRpcExceptionFilter());
    await suite.app.listen();
    await suite.broker.publish('', suite.queue, { pattern: 'guarded', data: 1 });
    await suite.broker.publish('', suite.queue, { pattern: 'validated', data: 'x' });
    await suite.broker.publish('', suite.queue, { pattern: 'intercepted', data: 2 });
    const parked = await suite.broker.take(`${suite.queue}.error`, 2, 10_000);
    const byPattern = Object.fromEntries(
      parked.map((m) => [(JSON.parse(m.content.toString()) as { pattern: string }).pattern, m.properties.headers as Record<string, unknown>]),
    );
    expect(byPattern.guarded).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 2, 'x-exception-message': 'Forbidden resource' });
    expect(byPattern.validated).toMatchObject({
      'x-parked-reason': 'exhausted',
      'x-retry-attempts': 2,
      'x-exception-message': 'id must be a number',
    });
    expect(suite.app.get(PipelineController).called).toBe(0);
    await waitFor(() => AttemptInterceptor.seen.length === 2, 'the retried handler twice');
    expect(AttemptInterceptor.seen).toEqual([
      { isRetryContext: true, attempt: 1 },
      { isRetryContext: true, attempt: 2 },
    ]);
  });

  it("waits a pattern's own first delay even for a message published with a shorter per-message TTL", async () => {
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, delays: [300], maxAttempts: 2, delayedDelivery: false });
    suite.app = await NestFactory.createMicroservice(LongDelayModule, { strategy: server, logger: false });
    await suite.app.listen();
    // The consumer takes it at once, well within its TTL; the broker drops a TTL when it dead-letters, so must a move.
    await suite.broker.publish('', suite.queue, { pattern: 'order.audited', data: { id: 1 } }, { expiration: '400' });
    const controller = suite.app.get(LongDelayController);
    await waitFor(() => controller.at.length === 2, 'the second attempt', 10_000);
    expect(controller.at[1] - controller.at[0]).toBeGreaterThanOrEqual(1_400);
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
  });

  it("routes a pattern to the handler whose topic wildcard matches it, with that handler's policy; an exact pattern wins", async () => {
    const exchange = uniqueName('e2e.transport.patterns.x');
    suite.extraExchanges.push(exchange);
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, exchange, maxAttempts: 1, delayedDelivery: false });
    suite.app = await NestFactory.createMicroservice(WildcardModule, { strategy: server, logger: ['error'] });
    suite.app.useGlobalFilters(new RetryRpcExceptionFilter());
    await suite.app.listen();
    const client = new RetryClient({ url: AMQP_URL, exchange, delayedDelivery: false });
    try {
      await lastValueFrom(client.emit('order.created', { failures: 1 }), { defaultValue: undefined });
      await lastValueFrom(client.emit('order.paid', { failures: 0 }), { defaultValue: undefined });
      await lastValueFrom(client.emit('order.cancelled', { failures: 99 }), { defaultValue: undefined });
      expect(await firstValueFrom(client.send('stock.level.eu', {}))).toEqual({ pattern: 'stock.level.eu' });
    } finally {
      await client.close();
    }
    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1, 10_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 3 });
    const { calls } = suite.app.get(WildcardController);
    await waitFor(() => calls.length === 6, 'every attempt');
    const of = (pattern: string) => calls.filter((c) => c.pattern === pattern).map((c) => `${c.handler} #${c.attempt}`);
    expect([of('order.created'), of('order.paid'), of('order.cancelled')]).toEqual([
      ['order.* #1', 'order.* #2'],
      ['order.paid #1'],
      ['order.* #1', 'order.* #2', 'order.* #3'],
    ]);
  });

  it('parks a null or boolean pattern as no-handler beside wildcards, and answers a request whose envelope id is a number', async () => {
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, maxAttempts: 1, delayedDelivery: false });
    suite.app = await NestFactory.createMicroservice(WildcardModule, { strategy: server, logger: ['error'] });
    await suite.app.listen();
    const replies = uniqueName('e2e.transport.patterns.replies');
    suite.extraQueues.push(replies);
    await suite.broker.declareQueue(replies);
    await suite.broker.publish('', suite.queue, { pattern: null, data: 1 });
    await suite.broker.publish('', suite.queue, { pattern: true, data: 2 });
    await suite.broker.publish('', suite.queue, { pattern: 'stock.level.eu', data: {}, id: 7 }, { replyTo: replies, correlationId: 'c-7' });
    const parked = await suite.broker.take(`${suite.queue}.error`, 2, 10_000);
    expect(parked.map((m) => m.properties.headers?.['x-parked-reason'])).toEqual(['no-handler', 'no-handler']);
    const [reply] = await suite.broker.take(replies, 1, 10_000);
    expect(reply.properties.correlationId).toBe('c-7');
    expect(JSON.parse(reply.content.toString())).toMatchObject({ response: { pattern: 'stock.level.eu' }, id: 7 });
  });

  it('takes the retry policy of a pattern from whichever of its chained handlers gives it', async () => {
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, delays: [300], maxAttempts: 2, delayedDelivery: false });
    suite.app = await NestFactory.createMicroservice(TwoHandlersModule, { strategy: server, logger: ['error'] });
    await suite.app.listen();
    await suite.broker.publish('', suite.queue, { pattern: 'twice', data: { id: 1 } });
    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1, 15_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 5 });
    expect(suite.app.get(FirstOfTwoController).attempts).toEqual([1, 2, 3, 4, 5]);
  });
});
