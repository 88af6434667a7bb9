import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MessagePattern, Payload } from '@nestjs/microservices';
import amqp from 'amqplib';
import { firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { of } from 'rxjs';
import { RetryClient, RetryServer } from 'nestjs-amqp-retry/transport';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { RecordingLogger } from '../support/recording-logger.js';

@Controller()
class AnsweringController {
  @MessagePattern('answer.now')
  now(@Payload() n: number): number {
    return n * 2;
  }

  @MessagePattern('answer.stream')
  stream(@Payload() n: number) {
    return of(n, n + 1, n + 2);
  }

  @MessagePattern('answer.slowly')
  async slowly(@Payload() query: { ms: number }): Promise<string> {
    await new Promise((resolve) => setTimeout(resolve, query.ms));
    return 'late';
  }
}

@Module({ controllers: [AnsweringController] })
class AnsweringModule {}

/** What RetryServer warns about replies: a line per caller that is really gone, none for a caller that got its answer. */
const REPLY_WARNING = /^warn .*(Could not reply|caller .*gone|reply .*dropped)/;

describe('replies to requests: warnings only for callers that are really gone', () => {
  const suite = useSuite<INestMicroservice>('e2e.transport.replies');
  let logger: RecordingLogger;

  beforeEach(async () => {
    logger = new RecordingLogger();
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false });
    suite.app = await NestFactory.createMicroservice(AnsweringModule, { strategy: server, logger: false });
    suite.app.useLogger(logger);
    await suite.app.listen();
  });

  it('logs nothing about replies when the caller got its answers (single values and streams, 20 requests)', async () => {
    const client = new RetryClient({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false });
    try {
      for (let n = 0; n < 10; n++) await expect(firstValueFrom(client.send('answer.now', n))).resolves.toBe(n * 2);
      for (let n = 0; n < 10; n++) await expect(lastValueFrom(client.send('answer.stream', n).pipe(toArray()))).resolves.toEqual([n, n + 1, n + 2]);
    } finally {
      await client.close();
    }
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'every request acked');
    expect(logger.matching(REPLY_WARNING)).toEqual([]);
    expect(logger.count(/^(warn|error) /)).toBe(0);
  });

  it('warns once when the caller closed its connection before the reply (direct reply-to), and acks the request', async () => {
    const connection = await amqp.connect(AMQP_URL);
    try {
      const channel = await connection.createChannel();
      await channel.consume('amq.rabbitmq.reply-to', () => undefined, { noAck: true });
      channel.sendToQueue(suite.queue, Buffer.from(JSON.stringify({ pattern: 'answer.slowly', data: { ms: 600 }, id: 'r-gone' })), {
        replyTo: 'amq.rabbitmq.reply-to',
        correlationId: 'r-gone',
      });
      await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'the request taken by the server');
    } finally {
      await connection.close(); // the caller is gone while the handler still runs (and closed whatever failed)
    }
    await waitFor(() => logger.count(REPLY_WARNING) > 0, 'the warning about the gone caller');
    await new Promise((resolve) => setTimeout(resolve, 300)); // a second line would come right after the first
    const [line, ...more] = logger.matching(REPLY_WARNING).map((e) => e.line);
    expect(more).toEqual([]);
    expect(line).toMatch(/"answer\.slowly"/);
    expect(line).toMatch(/gone/);
    expect(await suite.broker.count(suite.queue)).toBe(0);
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
  });

  it('warns once when the reply queue (not direct reply-to) does not exist', async () => {
    const replyTo = uniqueName('e2e.nobody');
    await suite.broker.publish('', suite.queue, { pattern: 'answer.now', data: 1, id: 'r-1' }, { replyTo, correlationId: 'r-1' });
    await waitFor(() => logger.count(REPLY_WARNING) > 0, 'the warning about the missing reply queue');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(logger.count(REPLY_WARNING)).toBe(1);
    expect(logger.matching(REPLY_WARNING)[0].line).toContain(replyTo);
  });
});
