import { Global, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DataSource, type EntityManager } from 'typeorm';
import { OutboxPublisher, RetryModule, RetryWithBackoff, typeormOutboxAdapter, type RetryContext } from 'nestjs-amqp-retry';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { sql, uniqueTable, useOutboxSuite } from '../support/outbox.js';
import { POSTGRES_URL } from '../support/stores.js';

/**
 * docs/outbox.md, "With Nest's dependency injection": the outbox and the inbox on a DataSource that Nest injects
 * (`RetryModule.forRootAsync({ imports, inject: [DataSource], useFactory })`). The database module below stands in for
 * `TypeOrmModule.forRoot()`, which provides the DataSource the same way: an async provider of a global module.
 */
describe('the outbox and inbox on an injected TypeORM DataSource', () => {
  const suite = useOutboxSuite('e2e.outbox.di', { tablePrefix: 'e2e_outbox_di' });
  let invoices: string;
  let auditInbox: string;

  beforeEach(async () => {
    invoices = uniqueTable('e2e_invoices_di');
    auditInbox = uniqueTable('e2e_inbox_di_audit');
    suite.tables.push(invoices, auditInbox);
    suite.extraExchanges.push(`${suite.queue}.orders`);
    await sql(`CREATE TABLE "${invoices}" (order_id integer PRIMARY KEY)`);
  });

  it('forRootAsync with inject: [DataSource]: a service publishes in its transaction, the handler runs in the inbox transaction', async () => {
    const { queue, table: outboxTable, inboxTable } = suite;
    @Global()
    @Module({
      providers: [
        {
          provide: DataSource,
          useFactory: () => new DataSource({ type: 'postgres', url: POSTGRES_URL, poolSize: 5 }).initialize(),
        },
      ],
      exports: [DataSource],
    })
    class DatabaseModule {}

    @Injectable()
    class OrdersService {
      constructor(
        private readonly dataSource: DataSource,
        private readonly outbox: OutboxPublisher,
      ) {}

      place(id: number) {
        return this.dataSource.transaction((manager) =>
          this.outbox.publish(manager, { exchange: `${queue}.orders`, routingKey: 'order.created', body: { id } }),
        );
      }
    }

    @Injectable()
    class BillingHandler {
      readonly handled: number[] = [];

      @RetryWithBackoff({ queue, exchange: `${queue}.orders`, routingKey: 'order.created', delays: [100] }) // the module's inbox
      async onOrderCreated(order: { id: number }, ctx: RetryContext<EntityManager>) {
        await ctx.transaction.query(`INSERT INTO "${invoices}" (order_id) VALUES ($1)`, [order.id]);
        this.handled.push(order.id);
      }
    }

    // A handler's own inbox table, on the module's adapter: the injected DataSource reaches a decorator this way.
    const auditQueue = suite.retryQueue();
    @Injectable()
    class AuditHandler {
      readonly handled: number[] = [];

      @RetryWithBackoff({ queue: auditQueue, exchange: `${queue}.orders`, routingKey: 'order.created', delays: [100], inbox: { table: auditInbox } })
      async onOrderCreated(order: { id: number }, ctx: RetryContext<EntityManager>) {
        const [{ n }] = (await ctx.transaction.query(`SELECT count(*)::int AS n FROM "${auditInbox}"`)) as Array<{ n: number }>;
        this.handled.push(order.id, n); // its record, not committed yet: this is the inbox's transaction
      }
    }

    const moduleRef = await Test.createTestingModule({
      imports: [
        DatabaseModule,
        RetryModule.forRootAsync({
          imports: [DatabaseModule],
          inject: [DataSource],
          useFactory: (dataSource: DataSource) => ({
            url: AMQP_URL,
            delayedDelivery: false,
            outbox: { adapter: typeormOutboxAdapter(dataSource), table: outboxTable },
            inbox: { adapter: typeormOutboxAdapter(dataSource), table: inboxTable },
          }),
        }),
      ],
      providers: [OrdersService, BillingHandler, AuditHandler],
    }).compile();
    moduleRef.useLogger(false);
    const app = (suite.app = await moduleRef.init());

    await app.get(OrdersService).place(42);
    const handler = app.get(BillingHandler);
    const audit = app.get(AuditHandler);
    await waitFor(() => handler.handled.length === 1 && audit.handled.length === 2, 'the order handled by both', 15_000);
    await app.close();
    suite.app = undefined;

    expect(handler.handled).toEqual([42]);
    expect(await sql(`SELECT order_id FROM "${invoices}"`)).toEqual([{ order_id: 42 }]);
    expect(await sql(`SELECT count(*)::int AS n FROM "${inboxTable}"`)).toEqual([{ n: 1 }]); // recorded with the invoice
    expect(audit.handled).toEqual([42, 1]);
    expect(await sql(`SELECT count(*)::int AS n FROM "${auditInbox}"`)).toEqual([{ n: 1 }]); // its own table, the module's DataSource
  });
});
