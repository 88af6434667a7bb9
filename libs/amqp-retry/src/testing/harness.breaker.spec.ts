import { Injectable, Module } from '@nestjs/common';
import { RetryEngine } from '../engine/retry.engine.js';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

let downstreamUp = false;

@Injectable()
class InvoiceHandler {
  @RetryWithBackoff({
    queue: 'harness.invoices',
    exchange: 'harness.billing',
    routingKey: 'invoice.issued',
    delays: ['5s'],
    maxAttempts: 10,
    circuitBreaker: { consecutiveFailures: 3, openFor: '30s' },
  })
  issue(): void {
    if (!downstreamUp) throw new Error('downstream is down');
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [InvoiceHandler] })
class BillingModule {}

describe('the test harness and the circuit breaker', () => {
  let harness: RetryHarness;

  beforeAll(async () => {
    harness = await RetryHarness.start(BillingModule);
  });
  afterAll(async () => {
    await harness.close();
  });

  const state = () =>
    harness.application
      .get(RetryEngine)
      .queueStates()
      .find((q) => q.queue === 'harness.invoices')?.state;

  it('opens after three failures in a row, holds the queue in virtual time, and closes once calls succeed', async () => {
    for (let i = 1; i <= 5; i++) harness.publish('harness.billing', 'invoice.issued', { invoice: i }, { messageId: `i-${i}` });
    await harness.advance('1s');
    expect(state()).toBe('open');
    const handlerCalls = harness.attempts().length; // the five were in flight together (prefetch): all were called
    await harness.advance('20s');
    expect(harness.attempts()).toHaveLength(handlerCalls); // back from their 5 s tier, but open: none reaches the handler

    downstreamUp = true;
    await harness.advance('30s'); // half-opens, the trial calls succeed
    await harness.settle();
    expect(state()).toBe('running');
    expect(new Set(harness.handled('harness.invoices').map((h) => h.messageId))).toEqual(new Set(['i-1', 'i-2', 'i-3', 'i-4', 'i-5']));
  });
});
