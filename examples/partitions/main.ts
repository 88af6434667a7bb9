// A partitioned handler: the queue is split into `count` partition queues by a hash of each message's key (here the
// header x-account-id), and each partition is consumed by one instance at a time; an account's events run one at a
// time and in order, and start more instances to share the partitions. With whileRetrying: 'hold', a failed event is
// retried in place and the events behind it wait. Needs RabbitMQ's consistent-hash exchange plugin, shipped with every
// RabbitMQ and off by default: rabbitmq-plugins enable rabbitmq_consistent_hash_exchange (docs/partitions.md).
//   node dist/partitions/main.js                   consumes "accounts.events" until Ctrl-C; publishes one event
//   EXAMPLE_SMOKE=1 node dist/partitions/main.js   publishes 3 accounts x 4 events, one failing once, checks the order
import 'reflect-metadata';
import type { Channel } from 'amqplib';
import { Injectable, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RetryModule, RetryPublisher, RetryWithBackoff, partitionNames, retryTopologyNames, type RetryContext } from 'nestjs-amqp-retry';
import { AMQP_URL, SMOKE, expectEqual, smokeRun, suffix, waitFor } from '../shared/smoke';

interface AccountEvent {
  account: string;
  seq: number;
}

const EXCHANGE = `bank${suffix}`;
const QUEUE = `accounts.events${suffix}`;
const COUNT = 4;
const POLICY = { delays: ['250ms'], maxAttempts: 3 };

/** Per account: the events handled, in order, the partition queues they ran in, and how many were retried. */
const seen = new Map<string, { seqs: number[]; queues: Set<string>; retried: number }>();

@Injectable()
export class AccountsHandler {
  private readonly logger = new Logger('Accounts');

  @RetryWithBackoff({
    queue: QUEUE,
    exchange: EXCHANGE, // optional: without it, publish to the exchange named like the queue
    routingKey: 'account.*',
    ...POLICY,
    partitions: { count: COUNT, key: { header: 'x-account-id' }, whileRetrying: 'hold' },
  })
  async onAccountEvent(event: AccountEvent, ctx: RetryContext): Promise<void> {
    if (event.account === 'B' && event.seq === 2 && ctx.attempt === 1) throw new Error('ledger busy'); // B's 3 and 4 wait
    const account = seen.get(event.account) ?? { seqs: [], queues: new Set<string>(), retried: 0 };
    seen.set(event.account, account);
    account.seqs.push(event.seq);
    account.queues.add(ctx.queue); // the partition queue: accounts.events.p0 .. p3
    if (ctx.attempt > 1) account.retried++;
    this.logger.log(`account ${event.account}: event ${event.seq} in ${ctx.queue}`);
  }
}

@Module({
  imports: [RetryModule.forRoot({ url: AMQP_URL, delayedDelivery: false })], // this app delays nothing: no delay ladder
  providers: [AccountsHandler],
})
export class AppModule {}

const publishEvent = (publisher: RetryPublisher, event: AccountEvent) =>
  publisher.publish(EXCHANGE, 'account.updated', event, { headers: { 'x-account-id': event.account } }); // the key

async function smoke(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
  try {
    const publisher = app.get(RetryPublisher);
    for (const seq of [1, 2, 3, 4]) for (const account of ['A', 'B', 'C']) await publishEvent(publisher, { account, seq });
    await waitFor(() => [...seen.values()].reduce((sum, account) => sum + account.seqs.length, 0) === 12, '12 events handled');
    for (const [account, { seqs, queues, retried }] of [...seen].sort()) {
      expectEqual({ seqs, retried }, { seqs: [1, 2, 3, 4], retried: account === 'B' ? 1 : 0 }, `account ${account}'s events`);
      expectEqual(queues.size, 1, `the partitions account ${account}'s events ran in`);
    }
  } finally {
    await app.close();
  }
}

/** Deletes every partition's queues and exchanges, then the hash exchange and the partitions' own names. */
async function deletePartitioned(channel: Channel): Promise<void> {
  const names = partitionNames(QUEUE);
  for (let i = 0; i < COUNT; i++) {
    const partition = retryTopologyNames(names.partition(i), POLICY);
    for (const queue of partition.queues) await channel.deleteQueue(queue);
    for (const exchange of partition.exchanges) await channel.deleteExchange(exchange);
  }
  for (const queue of [names.deadLetterQueue, names.keyRecord]) await channel.deleteQueue(queue);
  for (const exchange of [names.hashExchange, names.membersExchange, EXCHANGE]) await channel.deleteExchange(exchange);
}

async function main(): Promise<void> {
  if (SMOKE) return smokeRun('partitions', smoke, deletePartitioned);
  const app = await NestFactory.createApplicationContext(AppModule);
  app.enableShutdownHooks();
  await publishEvent(app.get(RetryPublisher), { account: 'A', seq: 1 });
}

void main();
