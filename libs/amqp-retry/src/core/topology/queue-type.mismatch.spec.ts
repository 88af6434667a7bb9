import { TopologyMismatchError } from '../../errors/topology-mismatch.error.js';
import { declaredQueueType, nextTypeProbe, queueTypeArgument, queueTypeMismatch } from './queue-type.mismatch.js';

// The 406 texts as RabbitMQ sends them (observed on 3.10.8, 4.0.5 and 4.3.6).
const refusal = (detail: string) => `inequivalent arg 'x-queue-type' for queue 'orders' in vhost 'quorum-first': ${detail}`;

describe('queueTypeMismatch', () => {
  it.each([
    ['classic', "received 'classic' but current is 'quorum'", 'quorum'],
    ['quorum', "received 'quorum' but current is 'classic'", 'classic'],
    ['quorum', "received the value 'quorum' of type 'longstr' but current is none", 'classic'],
    ['classic', "received none but current is the value 'quorum' of type 'longstr'", 'quorum'],
    ['classic', "received 'classic' but current is 'stream'", 'stream'],
  ] as const)('configured %s, refused with "%s": found %s', (configured, detail, found) => {
    expect(queueTypeMismatch(configured, refusal(detail))).toEqual({ configured, found });
  });

  it('reads the text with the quote amqplib leaves at its end', () => {
    expect(queueTypeMismatch('classic', `${refusal("received 'classic' but current is 'quorum'")}"`)).toEqual({
      configured: 'classic',
      found: 'quorum',
    });
  });

  it.each([
    [
      "inequivalent arg 'x-dead-letter-strategy' for queue 'orders' in vhost '/': received none but current is the value 'at-least-once' of type 'longstr'",
    ],
    [refusal("received 'classic' but current is 'classic'")],
    [refusal('received something odd')],
    [''],
  ])('finds no type mismatch in %j', (text) => {
    expect(queueTypeMismatch('classic', text)).toBeUndefined();
  });
});

describe('declaredQueueType and queueTypeArgument', () => {
  it('reads the type a declaration asks for', () => {
    expect(declaredQueueType(queueTypeArgument('quorum'))).toBe('quorum');
    expect(declaredQueueType({ 'x-queue-type': 'classic', 'x-message-ttl': 5 })).toBe('classic');
    expect(declaredQueueType({})).toBeUndefined();
    expect(declaredQueueType(undefined)).toBeUndefined();
  });
});

describe('TopologyMismatchError for a queue of another type', () => {
  it('names both types, the option and the way out', () => {
    const error = new TopologyMismatchError('queue', 'orders', refusal("received 'classic' but current is 'quorum'"), {
      configured: 'classic',
      found: 'quorum',
    });
    expect(error.message).toMatch(
      /^The queue "orders" exists on the broker as a quorum queue, but it is configured as a classic queue, queueType: 'classic' \(inequivalent arg 'x-queue-type'/,
    );
    expect(error.message).toContain("set queueType: 'quorum' where this queue is configured");
    expect(error.message).toContain('rabbitmqctl delete_queue orders');
    expect(error.queueTypes).toEqual({ configured: 'classic', found: 'quorum' });
  });
});

describe('nextTypeProbe', () => {
  const classic = { 'x-dead-letter-exchange': 'orders.dlx', 'x-queue-type': 'classic' };
  const arg = (key: string, detail: string) => `inequivalent arg '${key}' for queue 'orders' in vhost '/': ${detail}`;

  it('sets a refused argument as the queue has it, keeping the type, until the refusal names the type', () => {
    const first = nextTypeProbe(classic, arg('x-dead-letter-strategy', "received none but current is the value 'at-least-once' of type 'longstr'"));
    expect(first).toEqual({ ...classic, 'x-dead-letter-strategy': 'at-least-once' });
    const second = nextTypeProbe(first ?? {}, arg('x-delivery-limit', "received none but current is the value 20 of type 'long'"));
    expect(second).toEqual({ ...classic, 'x-dead-letter-strategy': 'at-least-once', 'x-delivery-limit': 20 });
    expect(nextTypeProbe(classic, arg('x-single-active-consumer', "received none but current is the value true of type 'bool'"))).toMatchObject({
      'x-single-active-consumer': true,
    });
  });

  it('removes an argument the queue does not have, and reads the short form of a string', () => {
    expect(
      nextTypeProbe({ ...classic, 'x-message-ttl': 5 }, arg('x-message-ttl', "received the value 5 of type 'signedint' but current is none")),
    ).toEqual(classic);
    expect(nextTypeProbe(classic, arg('x-dead-letter-exchange', "received 'orders.dlx' but current is 'other.dlx'"))).toEqual({
      ...classic,
      'x-dead-letter-exchange': 'other.dlx',
    });
  });

  it('stops at the type itself, at a refusal it cannot read, and at a value it cannot write back', () => {
    expect(nextTypeProbe(classic, refusal("received 'classic' but current is 'quorum'"))).toBeUndefined();
    expect(nextTypeProbe(classic, 'NOT_FOUND - no queue')).toBeUndefined();
    expect(nextTypeProbe(classic, arg('x-foo', "received none but current is the value {1,2} of type 'table'"))).toBeUndefined();
  });
});
