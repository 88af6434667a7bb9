import { Test } from '@nestjs/testing';
import { NonRetryableError, RetryEngine, RetryPublisher } from 'nestjs-amqp-retry';
import { RetryHarness } from 'nestjs-amqp-retry/testing';
import { RetryServer } from 'nestjs-amqp-retry/transport';
import { AppModule } from '../app.module.js';
import { SHIPPING_QUEUE } from '../shipping/shipment.js';
import { ORDER_CREATED, ORDERS_EXCHANGE, PAYMENT_DEADLINE, type OrderCreated } from './order.js';
import { OrderProgress } from './order.progress.js';
import { PaymentGateway } from './payment.gateway.js';

const PAYMENTS = 'example.orders.payment';

/** A gateway whose answers the test scripts: how many charges of an order fail before one succeeds. */
class ScriptedGateway {
  readonly failures = new Map<number, number>();

  async charge(order: OrderCreated): Promise<void> {
    if (order.amountCents <= 0) throw new NonRetryableError(`order ${order.id} has a non-positive amount (${order.amountCents})`);
    const left = this.failures.get(order.id) ?? 0;
    if (left > 0) {
      this.failures.set(order.id, left - 1);
      throw new Error(`payment provider timed out charging order ${order.id}`);
    }
  }
}

describe('the orders service on the test harness', () => {
  const gateway = new ScriptedGateway();
  let harness: RetryHarness;

  beforeAll(async () => {
    // The whole application, as main.ts starts it (the shipping microservice included), with the gateway replaced.
    const app = Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(PaymentGateway)
      .useValue(gateway);
    harness = await RetryHarness.start(app, {
      microservices: (started) => [new RetryServer({ queue: SHIPPING_QUEUE, delays: ['1s'], engine: started.get(RetryEngine) })],
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  const order = (id: number, amountCents = 1_000): OrderCreated => ({ id, customer: `customer-${id}`, amountCents });

  it('retries a failed payment after 1 s and 2 s, then requests the shipment', async () => {
    gateway.failures.set(1, 2);
    const { messageId } = harness.publish(ORDERS_EXCHANGE, ORDER_CREATED, order(1));
    await harness.settle();

    expect(harness.attempts(messageId).map((a) => [a.attempt, a.at, a.outcome])).toEqual([
      [1, expect.any(Number), 'retried'],
      [2, expect.any(Number), 'retried'],
      [3, expect.any(Number), 'handled'],
    ]);
    const [first, second, third] = harness.attempts(messageId).map((a) => a.at);
    expect([second - first, third - second]).toEqual([1_000, 2_000]);
    expect(harness.application.get(OrderProgress).outcomeOf(1)).toBe('already paid');
    const shipment = harness.published({ routingKey: SHIPPING_QUEUE }).filter((p) => p.by === 'application');
    expect(shipment.map((p) => [p.body, p.confirmed])).toEqual([[{ pattern: 'shipment.requested', data: { orderId: 1 } }, true]]);
  });

  it('parks an order with a non-positive amount at once, unretried', async () => {
    const { messageId } = harness.publish(ORDERS_EXCHANGE, ORDER_CREATED, order(2, -100));
    await harness.settle();

    expect(harness.attempts(messageId).map((a) => [a.attempt, a.outcome, a.parkReason])).toEqual([[1, 'parked', 'non-retryable']]);
    const parked = harness.parked(PAYMENTS).find((p) => p.messageId === messageId);
    expect(parked?.reason).toBe('non-retryable');
    expect(parked?.error).toBe('order 2 has a non-positive amount (-100)');
  });

  it('parks an order whose five attempts all fail, after 1 + 2 + 4 + 4 seconds of retries', async () => {
    gateway.failures.set(3, 100);
    const { messageId } = harness.publish(ORDERS_EXCHANGE, ORDER_CREATED, order(3));
    const started = harness.elapsed;
    await harness.settle();

    const attempts = harness.attempts(messageId);
    expect(attempts.map((a) => a.tier)).toEqual([undefined, 1, 2, 3, 3]);
    expect(attempts.at(-1)).toMatchObject({ attempt: 5, outcome: 'parked', parkReason: 'exhausted' });
    expect(attempts.at(-1)!.at - started).toBe(11_000);
    expect(harness.parked(PAYMENTS).find((p) => p.messageId === messageId)?.headers['x-retry-attempts']).toBe(5);
    expect(harness.application.get(OrderProgress).outcomeOf(3)).toBe('payment parked');
  });

  it('delivers the payment deadline when it is due, not a second earlier', async () => {
    const publisher = harness.application.get(RetryPublisher);
    await publisher.publish(ORDERS_EXCHANGE, PAYMENT_DEADLINE, { orderId: 4 }, { delay: '30m' });

    await harness.advance('29m59s');
    expect(harness.handled('example.orders.payment-deadline')).toEqual([]);
    await harness.advance('1s');
    expect(harness.handled('example.orders.payment-deadline').map((h) => h.body)).toEqual([{ orderId: 4 }]);
  });
});
