// The microservices transport (`nestjs-amqp-retry/transport`) in each consumer fixture, beside scenario.ts
// (scripts/test-consumers.sh copies both into src/shared/): a Nest microservice on RetryServer, a RetryClient that
// emits two events and sends one request. No relative imports (see scenario.ts): the test passes scenario.ts's broker
// helpers in.
import { randomUUID } from 'node:crypto';
import { Controller, Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientsModule, Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import amqp from 'amqplib';
import { lastValueFrom } from 'rxjs';
import { planDelayTopology } from 'nestjs-amqp-retry';
import { RetryClient, RetryRmqContext, RetryRpcExceptionFilter, RetryServer } from 'nestjs-amqp-retry/transport';

/** scenario.ts's helpers, passed in by the test. */
export interface BrokerHelpers {
  AMQP_URL: string;
  waitFor(probe: () => boolean | Promise<boolean>, what: string, timeoutMs?: number): Promise<void>;
  deleteRetryTopology(channel: amqp.Channel, queue: string): Promise<void>;
}

export interface TransportOutcome {
  createdAttempts: number[];
  refundAttempts: number[];
  reply: unknown;
  /** An event emitted with { delay } by a client injected (ClientsModule) as RetryClient: its id, and whether it came late enough. */
  reminded: { id: number; afterDelay: boolean } | undefined;
  parked: { pattern: unknown; reason: unknown; exception: unknown };
  left: { queue: number; error: number };
}

export const expectedTransportOutcome: TransportOutcome = {
  createdAttempts: [1, 2],
  refundAttempts: [1, 2],
  reply: { id: 3, status: 'paid' },
  reminded: { id: 4, afterDelay: true },
  parked: { pattern: 'order.refund', reason: 'exhausted', exception: 'refund 2 failed on attempt 2' },
  left: { queue: 0, error: 0 },
};

export async function runTransportScenario({ AMQP_URL, waitFor, deleteRetryTopology }: BrokerHelpers): Promise<TransportOutcome> {
  const queue = `consumer.rpc.${randomUUID().slice(0, 8)}`;
  const created: number[] = [];
  const refunds: number[] = [];
  let reminded: { id: number; at: number } | undefined;
  const delayPrefix = `consumer.delay.${randomUUID().slice(0, 8)}`;

  @Controller()
  class OrdersController {
    @EventPattern<string>('order.created')
    onCreated(@Payload() _order: { id: number }, @Ctx() ctx: RetryRmqContext): void {
      created.push(ctx.getRetryContext().attempt);
      if (ctx.getRetryContext().attempt === 1) throw new Error('stock service timed out');
    }

    @EventPattern<string>('order.refund')
    onRefund(@Payload() order: { id: number }, @Ctx() ctx: RetryRmqContext): void {
      refunds.push(ctx.getRetryContext().attempt);
      throw new Error(`refund ${order.id} failed on attempt ${ctx.getRetryContext().attempt}`);
    }

    @EventPattern<string>('order.remind')
    onRemind(@Payload() order: { id: number }): void {
      reminded = { id: order.id, at: Date.now() };
    }

    @MessagePattern('order.get')
    get(@Payload() query: { id: number }): { id: number; status: string } {
      return { id: query.id, status: 'paid' };
    }
  }

  @Module({ controllers: [OrdersController] })
  class RpcModule {}

  // Injected the Nest way, typed as RetryClient (not ClientProxy), so that emit() takes { delay }.
  @Injectable()
  class Reminders {
    constructor(@Inject('ORDERS') private readonly orders: RetryClient) {}

    remind(id: number): Promise<unknown> {
      return lastValueFrom(this.orders.emit('order.remind', { id }, { delay: '300ms' }), { defaultValue: undefined });
    }
  }

  @Module({
    imports: [
      ClientsModule.register([
        { name: 'ORDERS', customClass: RetryClient, options: { url: AMQP_URL, queue, delayedDelivery: { prefix: delayPrefix } } },
      ]),
    ],
    providers: [Reminders],
  })
  class SenderModule {}

  const connection = await amqp.connect(AMQP_URL);
  const channel = await connection.createChannel();
  const count = async (name: string) => (await channel.checkQueue(name)).messageCount;
  const server = new RetryServer({ url: AMQP_URL, queue, delays: [200], maxAttempts: 2, delayedDelivery: false });
  const client = new RetryClient({ url: AMQP_URL, queue, delayedDelivery: false });
  const app = await NestFactory.createMicroservice(RpcModule, { strategy: server, logger: false });
  const sender = await NestFactory.createApplicationContext(SenderModule, { logger: false });
  try {
    app.useGlobalFilters(new RetryRpcExceptionFilter());
    await app.listen();
    await client.connect();
    await lastValueFrom(client.emit('order.created', { id: 1 }));
    await lastValueFrom(client.emit('order.refund', { id: 2 }));
    const reply = await lastValueFrom(client.send('order.get', { id: 3 }));
    const remindedAt = Date.now();
    await sender.get(Reminders).remind(4);
    await waitFor(async () => created.length === 2 && (await count(`${queue}.error`)) === 1, 'a success on attempt 2 and a parked refund');
    await waitFor(() => reminded !== undefined, 'the delayed reminder');
    await sender.close();
    await client.close();
    await app.close();
    const parked = await channel.get(`${queue}.error`, { noAck: true });
    if (!parked) throw new Error('the parked message went missing');
    const headers = parked.properties.headers ?? {};
    return {
      createdAttempts: created,
      refundAttempts: refunds,
      reply,
      reminded: reminded && { id: reminded.id, afterDelay: reminded.at - remindedAt >= 300 - 5 },
      parked: {
        pattern: (JSON.parse(parked.content.toString()) as { pattern?: unknown }).pattern,
        reason: headers['x-parked-reason'],
        exception: headers['x-exception-message'],
      },
      left: { queue: await count(queue), error: await count(`${queue}.error`) },
    };
  } finally {
    await client.close();
    await sender.close();
    await app.close();
    await deleteRetryTopology(await connection.createChannel(), queue).catch((error: unknown) =>
      console.error(`cleaning up ${queue} failed:`, error),
    );
    await deleteLadder(await connection.createChannel(), delayPrefix).catch((error: unknown) =>
      console.error(`cleaning up the delay ladder ${delayPrefix} failed:`, error),
    );
    await connection.close();
  }
}

/** Deletes the delay ladder of `prefix`: its queues and exchanges. */
async function deleteLadder(channel: amqp.Channel, prefix: string): Promise<void> {
  const ladder = planDelayTopology(prefix);
  for (const { name } of ladder.queues) await channel.deleteQueue(name);
  for (const { name } of ladder.exchanges) await channel.deleteExchange(name);
  await channel.close();
}
