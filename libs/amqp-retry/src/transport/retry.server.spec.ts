import { RetryConfigError } from '../errors/retry-config.error.js';
import { RetryServer } from './retry.server.js';
import { RetryClient } from './retry.client.js';

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

describe("RetryServer's processing hooks", () => {
  type Processing = { processing<T>(context: unknown, fn: (end: () => void) => Promise<T>): Promise<T> };
  const serverWith = (start: (done: () => Promise<unknown>) => void) => {
    const server = new RetryServer({ url: 'amqp://127.0.0.1:1', queue: 'orders', delays: ['1s'] });
    const ends: unknown[] = [];
    server.setOnProcessingStartHook((_transport, _context, done) => start(done));
    server.setOnProcessingEndHook((_transport, context) => ends.push(context));
    return { processing: server as unknown as Processing, ends };
  };

  it('runs the call once, though the start hook calls done twice, and the end hook once', async () => {
    const { processing, ends } = serverWith((done) => void done().then(() => done()));
    let calls = 0;
    const result = await processing.processing('ctx', async (end) => {
      calls++;
      end();
      end();
      return 'ok';
    });
    expect([result, calls, ends]).toEqual(['ok', 1, ['ctx']]);
  });

  it('fails the call with the start hook throw, and runs the end hook', async () => {
    const { processing, ends } = serverWith(() => {
      throw new Error('hook broke');
    });
    await expect(processing.processing('ctx', async () => 'never')).rejects.toThrow('hook broke');
    expect(ends).toEqual(['ctx']);
  });
});

describe("RetryServer's processing end hook, when it throws", () => {
  type Processing = { processing<T>(context: unknown, fn: (end: () => void) => Promise<T>): Promise<T> };

  it("keeps the call's result: a handler that succeeded is not failed, nor run again, by the hook", async () => {
    const server = new RetryServer({ url: 'amqp://127.0.0.1:1', queue: 'orders', delays: ['1s'] });
    server.setOnProcessingEndHook(() => {
      throw new Error('end hook broke');
    });
    let calls = 0;
    const result = await (server as unknown as Processing).processing('ctx', async (end) => {
      calls++;
      end();
      return 'handled';
    });
    expect([result, calls]).toEqual(['handled', 1]);
  });
});

describe('the transport classes given no options object', () => {
  const makers = {
    RetryServer: (options: unknown) => new RetryServer(options as never),
    RetryClient: (options: unknown) => new RetryClient(options as never),
  };
  it.each([
    ['RetryServer', null, 'null'],
    ['RetryServer', undefined, 'undefined'],
    ['RetryServer', 'amqp://localhost', '"amqp://localhost"'],
    ['RetryServer', [], '[]'],
    ['RetryClient', null, 'null'],
    ['RetryClient', 42, '42'],
  ] as const)('%s(%p) fails naming its options and the fix', (name, options, shown) => {
    let failure: unknown;
    try {
      makers[name](options);
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(RetryConfigError);
    expect((failure as RetryConfigError).key).toBe(`${name} options`);
    expect((failure as Error).message).toContain(`${name} options are ${shown}, not an options object. Pass an options object, e.g. new ${name}({`);
  });
});
