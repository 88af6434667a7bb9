import { Controller, Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { ClientsModule, Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { RetryEngine } from '../engine/retry.engine.js';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryPublisher } from '../nest/retry.publisher.js';
import { RetryClient } from '../transport/retry.client.js';
import type { RetryRmqContext } from '../transport/retry-rmq.context.js';
import { RetryServer } from '../transport/retry.server.js';
import { RetryHarness } from './retry.harness.js';

const QUEUE = 'harness.shipping';
const CLIENT = 'HARNESS_SHIPPING_CLIENT';
const events: { carrier: string; attempt: number; at: number }[] = [];

@Controller()
class ShippingController {
  @EventPattern<string>('shipment.requested', { retry: { delays: ['5m'], maxAttempts: 3 } })
  requested(@Payload() request: { carrier: string }, @Ctx() ctx: RetryRmqContext): void {
    const { attempt } = ctx.getRetryContext();
    events.push({ carrier: request.carrier, attempt, at: Date.now() });
    if (attempt === 1) throw new Error('carrier busy');
  }

  @MessagePattern('shipment.status')
  status(@Payload() query: { orderId: number }): string {
    return `order ${query.orderId}: shipped`;
  }
}

@Injectable()
class Reminders {
  readonly received: number[] = [];

  @RetryWithBackoff({ queue: 'harness.reminders', exchange: 'harness.shop', routingKey: 'reminder.due' })
  remind(reminder: { orderId: number }): void {
    this.received.push(reminder.orderId);
  }
}

@Module({
  imports: [
    RetryModule.forRoot({}),
    ClientsModule.registerAsync([
      { name: CLIENT, inject: [RetryEngine], useFactory: (engine: RetryEngine) => ({ customClass: RetryClient, options: { queue: QUEUE, engine } }) },
    ]),
  ],
  controllers: [ShippingController],
  providers: [Reminders],
})
class ShopModule {}

describe('the test harness with the transport and delayed publishing', () => {
  let harness: RetryHarness;

  beforeAll(async () => {
    // `microservices` written as a method, as an object of the test's own: the harness calls it with its `this`.
    const setup = {
      queue: QUEUE,
      microservices(app: INestApplicationContext) {
        return [new RetryServer({ queue: this.queue, delays: ['1s'], engine: app.get(RetryEngine) })];
      },
    };
    harness = await RetryHarness.start(ShopModule, setup);
  });

  afterAll(async () => {
    await harness.close();
  });

  it('answers a request sent with the client', async () => {
    const client = harness.application.get<RetryClient>(CLIENT);
    const reply = await lastValueFrom(client.send<string>('shipment.status', { orderId: 7 }));
    expect(reply).toBe('order 7: shipped');
  });

  it("retries an event on its pattern's own schedule", async () => {
    const client = harness.application.get<RetryClient>(CLIENT);
    const start = harness.now.getTime();
    await lastValueFrom(client.emit('shipment.requested', { carrier: 'acme' }), { defaultValue: undefined });
    await harness.settle();
    expect(events.map((e) => [e.attempt, e.at - start])).toEqual([
      [1, 0],
      [2, 300_000],
    ]);
  });

  it('delivers a delayed message when it is due, not before', async () => {
    const reminders = harness.application.get(Reminders);
    await harness.application.get(RetryPublisher).publish('harness.shop', 'reminder.due', { orderId: 9 }, { delay: '30m' });
    await harness.advance('29m59s');
    expect(reminders.received).toEqual([]);
    await harness.advance('1s');
    expect(reminders.received).toEqual([9]);
    const delayed = harness.published({ exchange: 'harness.shop', routingKey: 'reminder.due' });
    expect(delayed.map((p) => p.confirmed)).toEqual([true]);
  });
});
