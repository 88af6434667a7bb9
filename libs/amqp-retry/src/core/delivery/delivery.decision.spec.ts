import type { ConsumeMessage, MessageProperties } from 'amqplib';
import { NonRetryableError } from '../../errors/non-retryable.error.js';
import {
  type BeforeHandlingInput,
  decideAfterFailure,
  decideBeforeHandling,
  exhaustedBeforeHandling,
  isExhausted,
  QUORUM_DELIVERY_LIMIT,
  REDELIVERY_LIMIT,
  retryabilityOf,
} from './delivery.decision.js';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

const rejected = (count: number, queue = 'orders') => ({ queue, reason: 'rejected', count, exchange: 'shop', 'routing-keys': ['order.created'] });

/** `redelivered` as the broker sets it: on a message it counted a return of. */
const message = (
  content: Buffer | string,
  headers?: Record<string, unknown>,
  contentType?: string,
  redelivered = headers?.['x-delivery-count'] !== undefined || headers?.['x-acquired-count'] !== undefined,
): ConsumeMessage => ({
  content: typeof content === 'string' ? Buffer.from(content) : content,
  fields: { deliveryTag: 1, redelivered, exchange: 'shop', routingKey: 'order.created', consumerTag: 'c' },
  properties: { headers, contentType } as MessageProperties,
});

/** A delivery of `orders` (maxAttempts 3, classic) that already failed `failures` times. */
const input = (
  over: Partial<BeforeHandlingInput> & { failures?: number; headers?: Record<string, unknown>; body?: Buffer | string; redelivered?: boolean } = {},
): BeforeHandlingInput => {
  const { failures = 0, headers, body = json({ id: 7 }), redelivered, ...rest } = over;
  const history = failures > 0 ? { 'x-death': [rejected(failures), { ...rejected(failures, 'orders.retry.1'), reason: 'expired' }] } : {};
  return {
    message: message(body, { ...history, ...headers }, undefined, redelivered),
    queue: 'orders',
    maxAttempts: 3,
    queueType: 'classic',
    ...rest,
  };
};

describe('decideBeforeHandling', () => {
  it('hands the parsed body to the handler on the first attempt', () => {
    expect(decideBeforeHandling(input())).toEqual({ action: 'handle', payload: { id: 7 }, attempt: 1, deaths: [] });
    expect(decideBeforeHandling(input({ message: message(json(1), undefined) }))).toEqual({ action: 'handle', payload: 1, attempt: 1, deaths: [] });
  });

  it("counts the attempt from the queue's rejected entry and passes the deaths on", () => {
    const decision = decideBeforeHandling(input({ failures: 2 }));
    expect(decision).toMatchObject({ action: 'handle', attempt: 3 });
    expect(decision.deaths.map((d) => [d.queue, d.reason, d.count])).toEqual([
      ['orders', 'rejected', 2],
      ['orders.retry.1', 'expired', 2],
    ]);
  });

  it('counts a first failure moved into a tier by a publish, once it waited in a tier of the queue', () => {
    const tierDeath = { queue: 'orders.retry.1.1s.abc123', reason: 'expired', count: 1, exchange: '', 'routing-keys': ['orders.retry.1.1s.abc123'] };
    const moved = { 'x-retry-first-failure': 'orders', 'x-death': [tierDeath] };
    expect(decideBeforeHandling(input({ headers: moved }))).toMatchObject({ action: 'handle', attempt: 2 });
    expect(decideBeforeHandling(input({ headers: { 'x-retry-first-failure': 'orders' } }))).toMatchObject({ attempt: 1 });
    expect(decideBeforeHandling(input({ headers: { ...moved, 'x-retry-first-failure': 'billing' } }))).toMatchObject({ attempt: 1 });
  });

  it('still handles the last attempt', () => {
    expect(decideBeforeHandling(input({ failures: 2 }))).toMatchObject({ action: 'handle', attempt: 3 });
  });

  it.each([['{"id": 7'], [''], ['undefined'], ['\u00ff\u00fe']])('parks %p as malformed without a handler call', (body) => {
    const decision = decideBeforeHandling(input({ body }));
    expect(decision).toMatchObject({ action: 'park', reason: 'malformed', handlerCalls: 0, deaths: [] });
    expect(decision.action === 'park' && decision.error.message).toMatch(/^body is not valid JSON: /);
  });

  it('parks a body that is not UTF-8, naming the byte', () => {
    const decision = decideBeforeHandling(input({ body: Buffer.from([0x7b, 0xff, 0x7d]) }));
    expect(decision.action === 'park' && [decision.reason, decision.error.message]).toEqual([
      'malformed',
      'body is not valid UTF-8 (byte 0xff at offset 1)',
    ]);
  });

  it('parks a body whose content type is not JSON, unless the handler has another deserializer', () => {
    const m = message('a=1', {}, 'text/plain');
    const parked = decideBeforeHandling(input({ message: m }));
    expect(parked.action === 'park' && parked.error.message).toBe(
      `content type "text/plain" is not JSON; give the handler a deserializer ('raw' or a function) to accept it`,
    );
    expect(decideBeforeHandling(input({ message: m, deserializer: 'raw' }))).toMatchObject({ action: 'handle', payload: m.content });
    expect(decideBeforeHandling(input({ message: m, deserializer: (content) => content.toString().split('=') }))).toMatchObject({
      action: 'handle',
      payload: ['a', '1'],
    });
  });

  it('parks when the deserializer throws, counting the handler calls made before', () => {
    const deserializer = () => {
      throw new Error('bad protobuf');
    };
    const decision = decideBeforeHandling(input({ failures: 1, deserializer }));
    expect(decision).toMatchObject({ action: 'park', reason: 'malformed', handlerCalls: 1 });
    expect(decision.action === 'park' && decision.error.message).toBe('the deserializer threw: bad protobuf');
    expect(decision.deaths).toHaveLength(2);
  });

  it('parks as exhausted a message that already had every attempt, before reading the body', () => {
    const decision = decideBeforeHandling(input({ failures: 4, body: 'not json' }));
    expect(decision).toMatchObject({ action: 'park', reason: 'exhausted', handlerCalls: 4 });
    expect(decision.action === 'park' && decision.error.message).toBe('already had 4 attempts, and maxAttempts is 3');
  });

  describe('with a malformed x-death', () => {
    it.each<[string, unknown, string]>([
      ['a string element', [rejected(1), 'text'], 'x-death[1] is a string, not a table'],
      ['a negative count', [rejected(-3)], 'x-death[0].count is -3, not a whole number from 1'],
      ['a string count', [rejected(1), { ...rejected(1), count: '2' }], 'x-death[1].count is "2", not a whole number from 1'],
      ['a lone table', rejected(1), 'x-death is a table, not an array of tables'],
      ['null', null, 'x-death is null, not an array of tables'],
    ])('parks %s as malformed, naming the problem, without a handler call', (_, header, problem) => {
      const decision = decideBeforeHandling(input({ headers: { 'x-death': header } }));
      expect(decision).toMatchObject({ action: 'park', reason: 'malformed', handlerCalls: 0, deaths: [] });
      expect(decision.action === 'park' && decision.error.message).toBe(
        `the x-death header is malformed: ${problem}. Only the broker writes it, so the attempt number is unknown; the message is parked so that it is never dead-lettered again (find what publishes it with that header)`,
      );
    });

    it('parks before anything else: the redelivery limit, exhaustion, a bad body', () => {
      const everything = input({
        queueType: 'quorum',
        headers: { 'x-death': [rejected(9), 42], 'x-delivery-count': REDELIVERY_LIMIT },
        body: 'not json',
      });
      const decision = decideBeforeHandling(everything);
      expect(decision.action === 'park' && decision.error.message).toMatch(/^the x-death header is malformed: x-death\[1\] is a number/);
    });
  });

  describe('on a quorum queue', () => {
    it('parks a message delivered REDELIVERY_LIMIT times without being settled, without calling the handler', () => {
      const at = (count: number) => input({ queueType: 'quorum', maxAttempts: 5, failures: 1, headers: { 'x-delivery-count': count } });
      expect(decideBeforeHandling(at(REDELIVERY_LIMIT - 1))).toMatchObject({ action: 'handle', attempt: 2 });
      const decision = decideBeforeHandling(at(REDELIVERY_LIMIT));
      expect(decision).toMatchObject({ action: 'park', reason: 'redelivery-limit', handlerCalls: 1 + REDELIVERY_LIMIT });
      expect(decision.deaths).toHaveLength(2);
      expect(decision.action === 'park' && decision.error.message).toBe(
        "delivered 10 times without being settled (the broker's x-delivery-count or x-acquired-count): the handler may crash its process, or outlive the consumer timeout",
      );
    });

    it('on RabbitMQ 4.0 to 4.2, which keep the count through dead-lettering, takes a count equal to the rejections for attempts', () => {
      // 4.0.5: the 11th attempt of a message that failed 10 times arrives redelivered with x-delivery-count 10; once the
      // queue gives it back, the header is the queue's own count again, from 1.
      const at = (failures: number, count: number, keepsDeliveryCounts: boolean) =>
        decideBeforeHandling(input({ queueType: 'quorum', maxAttempts: 30, failures, headers: { 'x-delivery-count': count }, keepsDeliveryCounts }));
      expect(at(10, 10, true)).toMatchObject({ action: 'handle', attempt: 11 });
      expect(at(25, 25, true)).toMatchObject({ action: 'handle', attempt: 26 });
      expect(at(10, 3, true)).toMatchObject({ action: 'handle', attempt: 11 }); // given back 3 times since it came
      expect(at(10, REDELIVERY_LIMIT + 1, true)).toMatchObject({
        action: 'park',
        reason: 'redelivery-limit',
        handlerCalls: 10 + REDELIVERY_LIMIT + 1,
      });
      expect(at(3, REDELIVERY_LIMIT, true)).toMatchObject({ action: 'park', reason: 'redelivery-limit' });
      expect(at(10, 10, false)).toMatchObject({ action: 'park', reason: 'redelivery-limit' }); // 3.10, 4.3: ten real returns
    });

    it('checks the redelivery limit before exhaustion and the body', () => {
      const decision = decideBeforeHandling(
        input({ queueType: 'quorum', failures: 7, body: 'not json', headers: { 'x-delivery-count': REDELIVERY_LIMIT } }),
      );
      expect(decision).toMatchObject({ action: 'park', reason: 'redelivery-limit' });
    });

    it('parks at REDELIVERY_LIMIT acquisitions on RabbitMQ 4.3, whose consumer timeouts raise x-acquired-count only', () => {
      const at = (count: number) => input({ queueType: 'quorum', headers: { 'x-acquired-count': count } });
      expect(decideBeforeHandling(at(REDELIVERY_LIMIT - 1))).toMatchObject({ action: 'handle', attempt: 1 });
      expect(decideBeforeHandling(at(REDELIVERY_LIMIT))).toMatchObject({
        action: 'park',
        reason: 'redelivery-limit',
        handlerCalls: REDELIVERY_LIMIT,
      });
    });

    it("does not count the application's own returns (a paused queue, an open circuit) as unsettled deliveries", () => {
      // RabbitMQ 4.3: a nack with requeue raises x-acquired-count only. 12 returns, 10 of them made on purpose.
      const own = (returns: number) => input({ queueType: 'quorum', headers: { 'x-acquired-count': 12 }, ownReturns: () => returns });
      expect(decideBeforeHandling(own(10))).toMatchObject({ action: 'handle', attempt: 1 });
      expect(decideBeforeHandling(own(2))).toMatchObject({ action: 'park', reason: 'redelivery-limit', handlerCalls: REDELIVERY_LIMIT });
      const parked = decideBeforeHandling(own(1));
      expect(parked.action === 'park' && parked.error.message).toContain('less 1 returns while its queue was paused or its circuit open');
      // Asked only of a delivery the broker counts any returns for.
      const asked: unknown[] = [];
      decideBeforeHandling(input({ queueType: 'quorum', ownReturns: (deaths) => asked.push(deaths) }));
      expect(asked).toEqual([]);
    });

    it("parks a delivery whose own returns bring the broker's x-delivery-count to the queue's delivery limit (3.10, 4.0)", () => {
      const at = (count: number) => input({ queueType: 'quorum', headers: { 'x-delivery-count': count }, ownReturns: () => count });
      expect(decideBeforeHandling(at(QUORUM_DELIVERY_LIMIT - 2))).toMatchObject({ action: 'handle' });
      const parked = decideBeforeHandling(at(QUORUM_DELIVERY_LIMIT - 1));
      expect(parked).toMatchObject({ action: 'park', reason: 'redelivery-limit' });
      expect(parked.action === 'park' && parked.error.message).toBe(
        `delivered ${QUORUM_DELIVERY_LIMIT - 1} times without being settled, ${QUORUM_DELIVERY_LIMIT - 1} of them put back while its queue was paused or its circuit open: the next return would pass the queue's delivery limit (${QUORUM_DELIVERY_LIMIT}), past which the broker drops it`,
      );
    });

    it.each([{ 'x-delivery-count': 12 }, { 'x-acquired-count': 12 }, { 'x-delivery-count': 12, 'x-acquired-count': 30 }])(
      'counts no earlier delivery on a delivery the broker did not mark redelivered, whatever its counts say: %p',
      (headers) => {
        expect(decideBeforeHandling(input({ queueType: 'quorum', headers, redelivered: false }))).toMatchObject({ action: 'handle', attempt: 1 });
      },
    );

    it('ignores a forged x-delivery-count that is not a whole number', () => {
      expect(decideBeforeHandling(input({ queueType: 'quorum', headers: { 'x-delivery-count': '99' } }))).toMatchObject({ action: 'handle' });
    });
  });

  it('ignores x-delivery-count on a classic queue, where any publisher can set it', () => {
    expect(decideBeforeHandling(input({ queueType: 'classic', headers: { 'x-delivery-count': 1_000 } }))).toMatchObject({ action: 'handle' });
  });

  it('acts before the broker does: its delivery limit is higher', () => {
    expect(QUORUM_DELIVERY_LIMIT).toBeGreaterThan(REDELIVERY_LIMIT);
  });
});

describe('decideAfterFailure', () => {
  it('retries in the tier of the attempt, the last tier repeating', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => decideAfterFailure(attempt, 6, true, 3))).toEqual([
      { action: 'retry', tier: 1 },
      { action: 'retry', tier: 2 },
      { action: 'retry', tier: 3 },
      { action: 'retry', tier: 3 },
      { action: 'retry', tier: 3 },
    ]);
  });

  it('parks as exhausted on the last attempt', () => {
    expect(decideAfterFailure(4, 4, true, 3)).toEqual({ action: 'park', reason: 'exhausted' });
    expect(decideAfterFailure(1, 1, true, 3)).toEqual({ action: 'park', reason: 'exhausted' });
  });

  it('parks a non-retryable error at once', () => {
    expect(decideAfterFailure(1, 4, false, 3)).toEqual({ action: 'park', reason: 'non-retryable' });
  });
});

describe('retryabilityOf with a thrown value that throws on every trap', () => {
  it('counts it as retryable instead of throwing', () => {
    const hostile = new Proxy(
      {},
      {
        getPrototypeOf: () => {
          throw new Error('trap');
        },
      },
    );
    expect(retryabilityOf()(hostile)).toBe(true);
    expect(retryabilityOf([class Declined extends Error {}])(hostile)).toBe(true);
  });
});

describe('retryabilityOf', () => {
  class Declined extends Error {}
  class Timeout extends Error {}

  it('treats NonRetryableError as non-retryable whatever the option', () => {
    expect(retryabilityOf()(new NonRetryableError('no'))).toBe(false);
    expect(retryabilityOf(() => false)(new NonRetryableError('no'))).toBe(false);
  });

  it('matches classes with instanceof, subclasses included', () => {
    class HardDeclined extends Declined {}
    const retryable = retryabilityOf([Declined]);
    expect(retryable(new Declined())).toBe(false);
    expect(retryable(new HardDeclined())).toBe(false);
    expect(retryable(new Timeout())).toBe(true);
    expect(retryable('a string')).toBe(true);
  });

  it('uses a predicate', () => {
    const retryable = retryabilityOf((e) => e instanceof Error && e.message.startsWith('4'));
    expect(retryable(new Error('404'))).toBe(false);
    expect(retryable(new Error('503'))).toBe(true);
  });

  it('retries when the predicate itself throws', () => {
    const retryable = retryabilityOf(() => {
      throw new Error('bug');
    });
    expect(retryable(new Error('x'))).toBe(true);
  });
});

describe('one decision for "exhausted", before and after a handler call', () => {
  it('has no attempts left once the attempts made reach maxAttempts', () => {
    expect(isExhausted(2, 3)).toBe(false);
    expect(isExhausted(3, 3)).toBe(true);
    expect(isExhausted(4, 3)).toBe(true);
    expect(isExhausted(0, 1)).toBe(false);
    expect(isExhausted(1, 1)).toBe(true);
  });

  it('parks before attempt n exactly when n - 1 attempts were all there were', () => {
    expect(exhaustedBeforeHandling(3, 3)).toBeUndefined();
    expect(exhaustedBeforeHandling(4, 3)).toMatchObject({
      reason: 'exhausted',
      handlerCalls: 3,
      error: { message: 'already had 3 attempts, and maxAttempts is 3' },
    });
    expect(exhaustedBeforeHandling(1, 1)).toBeUndefined();
  });

  it('never retries a message into an attempt that would be parked as exhausted on its return, nor parks one that would run', () => {
    for (let maxAttempts = 1; maxAttempts <= 6; maxAttempts++) {
      for (let attempt = 1; attempt <= 8; attempt++) {
        const after = decideAfterFailure(attempt, maxAttempts, true, 3);
        const next = decideBeforeHandling(input({ failures: attempt, maxAttempts }));
        expect(after.action === 'retry').toBe(next.action === 'handle');
        expect(exhaustedBeforeHandling(attempt + 1, maxAttempts) === undefined).toBe(after.action === 'retry');
      }
    }
  });
});
