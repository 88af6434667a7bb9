import { RetryConfigError } from '../errors/retry-config.error.js';
import { RetryServer } from './retry.server.js';

describe('RetryServer with partitions, at listen', () => {
  it("refuses, before any connection, a count whose channels with the patterns' own schedules pass the budget", async () => {
    const server = new RetryServer({
      url: 'amqp://127.0.0.1:1', // never dialled: the start fails first
      queue: 'accounts',
      exchange: 'bank',
      delays: ['1s'],
      partitions: { count: 256, key: { header: 'x-account-id' } },
    });
    const handler = () => async () => undefined; // one per pattern: Nest keeps a pattern's extras on its function
    for (let i = 0; i < 7; i++) server.addHandler(`account.e${i}`, handler(), true, { retry: { delays: [`${i + 2}s`] } });
    server.addHandler('account.same', handler(), true, { retry: { delays: ['2s'] } }); // shares account.e0's schedule
    const failure = await new Promise<unknown>((resolve) => void server.listen((error) => resolve(error)));
    expect(failure).toBeInstanceOf(RetryConfigError);
    expect((failure as Error).message).toContain('RetryServer option "partitions.count" is 256 with 8 retry schedules');
    await server.close();
  });
});
