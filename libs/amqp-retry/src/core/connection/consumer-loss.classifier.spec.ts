import { classifyConsumerLoss } from './consumer-loss.classifier.js';

const TIMEOUT_40 =
  'Channel closed by server: 406 (PRECONDITION-FAILED) with message "PRECONDITION_FAILED - delivery acknowledgement on channel 2 timed out. Timeout value used: 2000 ms. This timeout value can be configured, see consumers doc guide to learn more"';

describe('classifyConsumerLoss', () => {
  it('reads a channel closed for a consumer timeout (RabbitMQ 3.10, 4.0) as lost deliveries to consume again at once', () => {
    const verdict = classifyConsumerLoss({ event: 'channel-closed', queue: 'orders', brokerReason: TIMEOUT_40, unsettled: 1, oldestHeldMs: 2400 });
    expect(verdict).toMatchObject({ cause: 'consumer-timeout', lost: true, resume: 'at-once', level: 'warn' });
    expect(verdict.line).toMatch(
      /^"orders": the broker's consumer timeout of 2s expired and it closed the consuming channel, taking back 1 unsettled delivery, the oldest held for 2400ms/,
    );
    expect(verdict.line).toContain('RetryWithBackoff `timeout`');
  });

  it('reads a cancel with deliveries held while the queue exists (RabbitMQ 4.3, quorum) as a consumer timeout', () => {
    const verdict = classifyConsumerLoss({ event: 'cancelled', queue: 'orders', unsettled: 3, oldestHeldMs: 2004, queueExists: true });
    expect(verdict).toMatchObject({ cause: 'consumer-timeout', lost: true, resume: 'at-once', level: 'warn' });
    expect(verdict.line).toContain('with 3 unsettled deliveries, the oldest held for 2004ms while the queue still exists: a consumer timeout');
    expect(verdict.line).not.toContain('deleted');
  });

  it('reads a cancel for a deleted queue as such: declare again, with backoff', () => {
    expect(classifyConsumerLoss({ event: 'cancelled', queue: 'orders', unsettled: 0, queueExists: false })).toEqual({
      cause: 'queue-deleted',
      lost: true,
      resume: 'backoff',
      level: 'error',
      line: 'The broker cancelled the consumer of "orders": the queue was deleted',
    });
  });

  it('says what it does not know when the queue could not be checked', () => {
    const verdict = classifyConsumerLoss({ event: 'cancelled', queue: 'orders', unsettled: 0 });
    expect(verdict).toMatchObject({ cause: 'consumer-cancelled', lost: false, resume: 'backoff' });
    expect(verdict.line).toBe('The broker cancelled the consumer of "orders" (was the queue deleted?)');
  });

  it('consumes again at once after a cancel with nothing held on a queue that exists', () => {
    expect(classifyConsumerLoss({ event: 'cancelled', queue: 'orders', unsettled: 0, queueExists: true })).toMatchObject({
      cause: 'consumer-cancelled',
      lost: false,
      resume: 'at-once',
    });
  });

  it.each([0, 2])('refuses to consume a queue re-created with other arguments (%i held), declaring again with backoff', (unsettled) => {
    const verdict = classifyConsumerLoss({ event: 'cancelled', queue: 'orders', unsettled, queueExists: true, queueMatches: false });
    expect(verdict).toMatchObject({ cause: 'queue-mismatch', lost: unsettled > 0, resume: 'backoff', level: 'error' });
    expect(verdict.line).toBe(
      `The broker cancelled the consumer of "orders", and the queue there now refuses the handler's arguments (re-created by someone else?): not consuming it until it is declared as configured`,
    );
  });

  it('consumes again at once a queue that still takes the handler arguments', () => {
    expect(classifyConsumerLoss({ event: 'cancelled', queue: 'orders', unsettled: 0, queueExists: true, queueMatches: true })).toMatchObject({
      cause: 'consumer-cancelled',
      resume: 'at-once',
    });
  });

  it('leaves a channel lost with its connection to the connection, and logs nothing', () => {
    expect(classifyConsumerLoss({ event: 'channel-closed', queue: 'orders', unsettled: 2 })).toEqual({
      cause: 'connection-lost',
      lost: true,
      resume: 'connection',
      line: '',
      level: 'warn',
    });
  });

  it('keeps any other broker reason, declares again and resumes with backoff', () => {
    const verdict = classifyConsumerLoss({ event: 'channel-closed', queue: 'orders', brokerReason: '404 NOT_FOUND - no queue', unsettled: 0 });
    expect(verdict).toMatchObject({ cause: 'channel-closed', resume: 'backoff', level: 'error' });
    expect(verdict.line).toBe('The broker closed the channel consuming "orders" (404 NOT_FOUND - no queue), taking back 0 unsettled deliveries');
  });
});
