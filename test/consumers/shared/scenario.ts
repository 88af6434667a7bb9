// The application and the retry flow that every consumer fixture runs (scripts/test-consumers.sh copies this file into
// each fixture's src/shared/): what a user writes, compiled by the fixture's own tsc settings (CommonJS or ES modules)
// against the packed library. One file without relative imports, so it compiles and loads in both module systems and
// under Jest's default CommonJS setup. The flow: boot the application, publish one message to each handler through the
// injected RetryPublisher, wait for the outcome, shut down, read what the broker holds, delete every name it made.
import { randomUUID } from 'node:crypto';
import { Injectable, Module, type DynamicModule, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import amqp from 'amqplib';
import { RetryModule, RetryPublisher, RetryWithBackoff, type RetryContext } from 'nestjs-amqp-retry';

/** The broker names of one run, uuid-suffixed by the caller. */
export interface OrdersNames {
  exchange: string;
  /** Its handler fails on the first attempt and succeeds on the second. */
  flaky: string;
  /** Its handler always fails: parked after two attempts. */
  doomed: string;
}

/** The attempts each handler saw, in order. */
export interface OrdersLog {
  flaky: number[];
  doomed: number[];
}

export const RETRY_DELAY_MS = 200;

/** A module with both handlers and a service that publishes through the injected RetryPublisher. */
export function ordersModule(url: string, names: OrdersNames, log: OrdersLog) {
  @Injectable()
  class OrderHandlers {
    @RetryWithBackoff({ queue: names.flaky, exchange: names.exchange, routingKey: 'order.created', delays: [RETRY_DELAY_MS] })
    async onCreated(_order: unknown, context: RetryContext): Promise<void> {
      log.flaky.push(context.attempt);
      if (context.attempt === 1) throw new Error('payment service timed out');
    }

    @RetryWithBackoff({ queue: names.doomed, exchange: names.exchange, routingKey: 'order.refund', delays: [RETRY_DELAY_MS], maxAttempts: 2 })
    async onRefund(_order: unknown, context: RetryContext): Promise<void> {
      log.doomed.push(context.attempt);
      throw new Error(`refund failed on attempt ${context.attempt}`);
    }
  }

  @Injectable()
  class OrdersService {
    constructor(readonly publisher: RetryPublisher) {}

    created(id: number): Promise<void> {
      return this.publisher.publish(names.exchange, 'order.created', { id });
    }

    refund(id: number): Promise<void> {
      return this.publisher.publish(names.exchange, 'order.refund', { id });
    }
  }

  @Module({
    imports: [RetryModule.forRoot({ url, delayedDelivery: false })],
    providers: [OrderHandlers, OrdersService],
  })
  class OrdersModule {}

  const module: DynamicModule = { module: OrdersModule };
  return { module, OrdersService };
}

export interface ScenarioOutcome {
  flakyAttempts: number[];
  doomedAttempts: number[];
  parked: { body: string; reason: unknown; exception: unknown; attempts: unknown };
  /** Messages left in each queue after the application closed (the parked one taken). */
  left: { flaky: number; flakyError: number; doomed: number; doomedError: number };
}

/** What every fixture must see. */
export const expectedOutcome: ScenarioOutcome = {
  flakyAttempts: [1, 2],
  doomedAttempts: [1, 2],
  parked: { body: '{"id":2}', reason: 'exhausted', exception: 'refund failed on attempt 2', attempts: 2 },
  left: { flaky: 0, flakyError: 0, doomed: 0, doomedError: 0 },
};

export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

export async function waitFor(probe: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export async function runScenario(): Promise<ScenarioOutcome> {
  const suffix = randomUUID().slice(0, 8);
  const names: OrdersNames = { exchange: `consumer.shop.${suffix}`, flaky: `consumer.flaky.${suffix}`, doomed: `consumer.doomed.${suffix}` };
  const log: OrdersLog = { flaky: [], doomed: [] };
  const connection = await amqp.connect(AMQP_URL);
  const channel = await connection.createChannel();
  const count = async (queue: string) => (await channel.checkQueue(queue)).messageCount;
  const { module, OrdersService } = ordersModule(AMQP_URL, names, log);
  let app: INestApplicationContext | undefined;
  try {
    app = await NestFactory.createApplicationContext(module, { logger: false });
    await app.init();
    const orders = app.get(OrdersService);
    await orders.created(1);
    await orders.refund(2);
    await waitFor(async () => log.flaky.length === 2 && (await count(`${names.doomed}.error`)) === 1, 'a success on attempt 2 and a parked refund');
    await app.close();
    app = undefined;
    const parked = await channel.get(`${names.doomed}.error`, { noAck: true });
    if (!parked) throw new Error('the parked message went missing');
    const headers = parked.properties.headers ?? {};
    return {
      flakyAttempts: log.flaky,
      doomedAttempts: log.doomed,
      parked: {
        body: parked.content.toString(),
        reason: headers['x-parked-reason'],
        exception: headers['x-exception-message'],
        attempts: headers['x-retry-attempts'],
      },
      left: {
        flaky: await count(names.flaky),
        flakyError: await count(`${names.flaky}.error`),
        doomed: await count(names.doomed),
        doomedError: await count(`${names.doomed}.error`),
      },
    };
  } finally {
    await app?.close();
    await cleanUp(connection, names);
  }
}

/** Deletes every name the run made; a failure here is reported without hiding the test's own error. */
async function cleanUp(connection: amqp.ChannelModel, names: OrdersNames): Promise<void> {
  try {
    const channel = await connection.createChannel();
    for (const queue of [names.flaky, names.doomed]) await deleteRetryTopology(channel, queue);
    await channel.deleteExchange(names.exchange);
  } catch (error) {
    console.error(`cleaning up ${names.flaky} and ${names.doomed} failed:`, error);
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** Deletes a handler's queues and exchanges; its tier queues are the ones its plan queue names. */
export async function deleteRetryTopology(channel: amqp.Channel, queue: string): Promise<void> {
  const tiers = new Set<string>();
  for (
    let record = await channel.get(`${queue}.retry.plan`, { noAck: true });
    record;
    record = await channel.get(`${queue}.retry.plan`, { noAck: true })
  ) {
    const plan = JSON.parse(record.content.toString()) as { tiers?: string[]; retiring?: string[] };
    for (const name of [...(plan.tiers ?? []), ...(plan.retiring ?? [])]) tiers.add(name);
  }
  if (tiers.size === 0) throw new Error(`no tier queues recorded in ${queue}.retry.plan: the library's naming changed?`);
  for (const name of [queue, `${queue}.error`, `${queue}.dlx.dead`, `${queue}.retry.plan`, ...tiers]) await channel.deleteQueue(name);
  for (const name of [`${queue}.dlx`, `${queue}.dlx.first`, `${queue}.dlx.sort`, `${queue}.dlx.first-tier`, `${queue}.return`]) {
    await channel.deleteExchange(name);
  }
}
