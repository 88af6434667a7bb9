import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientRMQ, MessagePattern, RpcException } from '@nestjs/microservices';
import { lastValueFrom, type Observable } from 'rxjs';
import { RetryClient, RetryRpcExceptionFilter, RetryServer } from 'nestjs-amqp-retry/transport';
import { AMQP_URL } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

@Controller()
class FailingRequestsController {
  @MessagePattern('object')
  object(): never {
    throw new RpcException({ code: 'NOT_FOUND', id: 5 });
  }

  @MessagePattern('text')
  text(): never {
    throw new RpcException('no order 5');
  }

  @MessagePattern('plain')
  plain(): never {
    throw new Error('secret db password');
  }
}

@Module({ controllers: [FailingRequestsController] })
class FailingRequestsModule {}

/** What Nest's default RPC filter answers for each handler's error. */
const NEST_ANSWERS = {
  object: { code: 'NOT_FOUND', id: 5 },
  text: { status: 'error', message: 'no order 5' },
  plain: { status: 'error', message: 'Internal server error' },
};

describe("a request handler's error, as its caller receives it", () => {
  const suite = useSuite<INestMicroservice>('e2e.transport.request-errors');

  it.each([
    ['without a filter', false],
    ['with RetryRpcExceptionFilter global', true],
  ])("is what Nest's default filter answers, %s, to ClientRMQ and RetryClient", async (_name, withFilter) => {
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, delays: [100], maxAttempts: 2, delayedDelivery: false });
    suite.app = await NestFactory.createMicroservice(FailingRequestsModule, { strategy: server, logger: false });
    if (withFilter) suite.app.useGlobalFilters(new RetryRpcExceptionFilter());
    await suite.app.listen();
    const clients: Array<{ send(pattern: string, data: unknown): Observable<unknown>; close(): unknown }> = [
      new ClientRMQ({ urls: [AMQP_URL], queue: suite.queue, noAssert: true }),
      new RetryClient({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false }),
    ];
    suite.clients.push(...clients);
    for (const client of clients) {
      const answers: Record<string, unknown> = {};
      for (const pattern of Object.keys(NEST_ANSWERS))
        answers[pattern] = await lastValueFrom(client.send(pattern, {})).catch((error: unknown) => error);
      expect(answers).toEqual(NEST_ANSWERS);
    }
  });
});
