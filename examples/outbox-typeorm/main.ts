// The transactional outbox and inbox on PostgreSQL, with the DataSource that @nestjs/typeorm makes: a service writes its
// order and the message in one transaction (the message exists if and only if the order does), and the handler writes
// its invoice in the inbox's transaction, which records the message as handled (docs/outbox.md).
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node dist/outbox-typeorm/main.js   places order 1, handles it
//   EXAMPLE_SMOKE=1 node dist/outbox-typeorm/main.js   the same in a schema of its own, checks the tables, drops it
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import pg from 'pg';
import { Column, DataSource, Entity, PrimaryColumn, type EntityManager } from 'typeorm';
import { OutboxPublisher, RetryModule, RetryWithBackoff, typeormOutboxAdapter, type OutboxReceipt, type RetryContext } from 'nestjs-amqp-retry';
import { AMQP_URL, SMOKE, deleteHandlerTopology, expectEqual, smokeRun, suffix, waitFor } from '../shared/smoke';

const EXCHANGE = `orders${suffix}`;
const QUEUE = `billing.order-created${suffix}`;
const POLICY = { delays: ['250ms'] };
// A smoke run puts every table (the orders, the invoices, the outbox's and the inbox's) in a schema of its own, through
// the connection's search_path, and drops it afterwards; yours live in the database's default schema.
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = `outbox_example_${suffix.slice(1)}`;
const url = SMOKE
  ? `${DATABASE_URL}${DATABASE_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${SCHEMA}`)}`
  : DATABASE_URL;

@Entity('orders')
export class OrderEntity {
  @PrimaryColumn() id!: number;
  @Column() total!: number;
}

@Entity('invoices')
export class InvoiceEntity {
  @PrimaryColumn() orderId!: number;
}

@Injectable()
export class OrdersService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly outbox: OutboxPublisher,
  ) {}

  /** The order and its message commit together, or neither does: the relay publishes the message after the commit. */
  place(order: OrderEntity, failAfterPublish = false): Promise<OutboxReceipt> {
    return this.dataSource.transaction(async (manager) => {
      await manager.save(OrderEntity, order);
      const receipt = await this.outbox.publish(manager, { exchange: EXCHANGE, routingKey: 'order.created', body: order });
      if (failAfterPublish) throw new Error(`order ${order.id} rejected`); // rolls back the order and its message
      return receipt;
    });
  }
}

@Injectable()
export class BillingHandler {
  @RetryWithBackoff({ queue: QUEUE, exchange: EXCHANGE, routingKey: 'order.created', ...POLICY }) // the module's inbox
  async onOrderCreated(order: OrderEntity, ctx: RetryContext<EntityManager>): Promise<void> {
    await ctx.transaction.save(InvoiceEntity, { orderId: order.id }); // commits with the inbox's record, then the ack
  }
}

@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'postgres', url, autoLoadEntities: true, synchronize: true }), // synchronize: for the example only
    TypeOrmModule.forFeature([OrderEntity, InvoiceEntity]),
    RetryModule.forRootAsync({
      imports: [TypeOrmModule],
      inject: [DataSource],
      useFactory: (dataSource: DataSource) => ({
        url: AMQP_URL,
        delayedDelivery: false, // this app delays nothing: no delay ladder
        outbox: { adapter: typeormOutboxAdapter(dataSource) },
        inbox: { adapter: typeormOutboxAdapter(dataSource) }, // every handler's; inbox: false on one turns it off
      }),
    }),
  ],
  providers: [OrdersService, BillingHandler],
})
export class AppModule {}

async function smoke(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
  try {
    const orders = app.get(OrdersService);
    const db = app.get(DataSource);
    const receipt = await orders.place({ id: 1, total: 40 });
    await orders.place({ id: 2, total: 15 }, true).then(
      () => Promise.reject(new Error('order 2 was meant to roll back')),
      () => undefined,
    );
    const sent = async () => (await db.query(`SELECT state FROM amqp_retry_outbox`)).map((row: { state: string }) => row.state);
    await waitFor(async () => (await db.getRepository(InvoiceEntity).count()) === 1 && (await sent()).includes('sent'), 'the invoice of order 1');
    expectEqual(await sent(), ['sent'], 'the outbox rows (order 2 rolled back with its message)');
    expectEqual(
      (await db.getRepository(InvoiceEntity).find()).map(({ orderId }) => orderId),
      [1],
      'the invoices',
    );
    const inbox = await db.query(`SELECT queue, message_id AS "messageId" FROM amqp_retry_inbox`);
    expectEqual(inbox, [{ queue: QUEUE, messageId: receipt.messageId }], 'the inbox record');
  } finally {
    await app.close();
  }
}

async function main(): Promise<void> {
  if (SMOKE) {
    const admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA "${SCHEMA}"`);
    return smokeRun('outbox-typeorm', smoke, async (channel) => {
      await deleteHandlerTopology(channel, QUEUE, { ...POLICY, exchange: EXCHANGE });
      await admin.query(`DROP SCHEMA "${SCHEMA}" CASCADE`);
      await admin.end();
    });
  }
  const app = await NestFactory.createApplicationContext(AppModule);
  app.enableShutdownHooks();
  await app.get(OrdersService).place({ id: Date.now() % 1_000_000, total: 40 });
}

void main();
