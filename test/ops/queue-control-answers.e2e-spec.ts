import amqp, { type ConsumeMessage } from 'amqplib';
import { QueueControl } from 'nestjs-amqp-retry';
import { CONTROL_EXCHANGE } from '../../libs/amqp-retry/src/core/breaker/control.message.js';
import { AMQP_URL } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

/**
 * How long a pause or resume listens for answers: instances stand in here, bound to the control exchange as the
 * engine binds them (the queue's name as key), each answering after a delay of its own.
 */
describe('QueueControl collects the answers of every instance within its wait', () => {
  const suite = useSuite('e2e.control-answers');

  it('lists an instance that answers a second after another', async () => {
    const { queue } = suite;
    const connection = await amqp.connect(AMQP_URL);
    suite.afterThis(() => connection.close());
    const channel = await connection.createChannel();
    await channel.assertExchange(CONTROL_EXCHANGE, 'direct', { durable: true });
    for (const [instance, delayMs] of [
      ['quick', 0],
      ['slow', 1000],
    ] as const) {
      const { queue: inbox } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
      await channel.bindQueue(inbox, CONTROL_EXCHANGE, queue);
      await channel.consume(
        inbox,
        (message: ConsumeMessage | null) => {
          if (!message) return;
          const answer = Buffer.from(JSON.stringify({ instance, status: { queue, state: 'paused' } }));
          const { replyTo, correlationId } = message.properties as { replyTo: string; correlationId: string };
          setTimeout(() => channel.sendToQueue(replyTo, answer, { correlationId }), delayMs);
        },
        { noAck: true },
      );
    }
    const outcome = await QueueControl.create({ url: AMQP_URL }).pause(queue, { by: 'ops' }, 2_500);
    expect(outcome.routed).toBe(true);
    expect(outcome.replies.map((r) => r.instance)).toEqual(['quick', 'slow']);
  });
});
