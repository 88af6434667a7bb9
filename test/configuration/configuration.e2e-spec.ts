import { RetryConfigError, retryTopologyNames, TopologyMismatchError, type RetryHandlerOptions, type RetryModuleOptions } from 'nestjs-amqp-retry';
import { createApp, handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { useSuite } from '../support/suite.js';

describe('configuration', () => {
  const suite = useSuite('e2e.config');
  const savedEnv = { ...process.env };

  beforeEach(() =>
    suite.afterThis(async () => {
      process.env = { ...savedEnv };
      await suite.broker.deleteDelayLadder('amqp-retry.delay', true); // env-only apps run the default ladder
    }),
  );

  it('runs from the environment alone: AMQP_URL, RETRY_DELAYS, RETRY_MAX_ATTEMPTS', async () => {
    Object.assign(process.env, { AMQP_URL, RETRY_DELAYS: '150ms', RETRY_MAX_ATTEMPTS: '3' });
    const Handler = handlerFor({ queue: suite.queue }, () => {
      throw new Error('always');
    });
    const app = await startApp([Handler], 'env');
    try {
      await suite.broker.publish('', suite.queue, { id: 1 });
      const [parked] = await suite.broker.take(`${suite.queue}.error`, 1);
      const calls = handlerOf(app, Handler).calls;
      expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
      expect(calls[1].at - calls[0].at).toBeGreaterThanOrEqual(145);
      expect(calls[2].at - calls[1].at).toBeGreaterThanOrEqual(145);
      expect(parked.properties.headers?.['x-retry-attempts']).toBe(3);
    } finally {
      await app.close();
    }
  });

  it('takes RETRY_PREFETCH from the environment: that many handlers run at once, no more', async () => {
    Object.assign(process.env, { AMQP_URL, RETRY_PREFETCH: '7' });
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const Handler = handlerFor({ queue: suite.queue }, () => gate);
    const app = await startApp([Handler], 'env');
    try {
      for (let id = 0; id < 10; id++) await suite.broker.publish('', suite.queue, { id });
      const calls = handlerOf(app, Handler).calls;
      await waitFor(() => calls.length === 7, '7 concurrent calls');
      await new Promise((resolve) => setTimeout(resolve, 200)); // an eighth would arrive within a round trip
      expect(calls).toHaveLength(7);
      release();
      await waitFor(() => calls.length === 10, 'the remaining calls');
    } finally {
      release();
      await app.close();
    }
  });

  it('fails at creation on a bad environment variable, naming it, and declares nothing', async () => {
    process.env.RETRY_DELAYS = '1s,soon';
    const Handler = handlerFor({ queue: suite.queue }, () => undefined);
    const creation = createApp([Handler], 'env');
    await expect(creation).rejects.toThrow(RetryConfigError);
    await expect(createApp([Handler], 'env')).rejects.toThrow(
      /environment variable RETRY_DELAYS has "soon", which is not a duration\. Use milliseconds/,
    );
    expect(await suite.broker.exists(suite.queue)).toBe(false);
  });

  it('fails init on an invalid decorator, naming the method and option, and declares nothing', async () => {
    const Handler = handlerFor({ queue: suite.queue, maxAttempts: 0 }, () => undefined);
    const app = await createApp([Handler]);
    await expect(app.init()).rejects.toThrow(
      'Invalid retry configuration: @RetryWithBackoff option "maxAttempts" of TestHandler.handle is 0. Use a whole number from 1 to 1000000, e.g. 5.',
    );
    await app.close();
    expect(await suite.broker.exists(suite.queue)).toBe(false);
  });

  it('warns at start of a misspelt option, naming it and the option it meant, and runs with the rest', async () => {
    const options = { queue: suite.queue, delays: ['100ms'], maxAttempt: 2 } as RetryHandlerOptions;
    const Handler = handlerFor(options, () => {
      throw new Error('always');
    });
    const logger = new RecordingLogger();
    const created = await createApp([Handler], { ...TEST_OPTIONS, handlerTimout: '5s' } as RetryModuleOptions);
    created.useLogger(logger);
    suite.app = await created.init();
    expect(logger.lines.filter((line) => line.includes('is not an option'))).toEqual([
      'warn RetryModule option "handlerTimout" is not an option and is ignored: did you mean "handlerTimeout"?',
      'warn @RetryWithBackoff option "maxAttempt" of TestHandler.handle is not an option and is ignored: did you mean "maxAttempts"?',
    ]);
    await suite.broker.publish('', suite.queue, { id: 1 });
    await suite.broker.take(`${suite.queue}.error`, 1);
    expect(handlerOf(suite.app, Handler).calls.map((c) => c.attempt)).toEqual([1, 2]); // the default: one attempt per tier, and one more
  });

  it('fails init when two handlers consume one queue, and declares nothing', async () => {
    const First = handlerFor({ queue: suite.queue }, () => undefined);
    const Second = handlerFor({ queue: suite.queue }, () => undefined);
    const app = await createApp([First, Second]);
    await expect(app.init()).rejects.toThrow(
      /option "queue" of TestHandler\.handle is "e2e\.config\.\w+", which TestHandler\.handle consumes already/,
    );
    await app.close();
    expect(await suite.broker.exists(suite.queue)).toBe(false);
  });

  it("fails init when a handler parks in another handler's dead-letter queue, naming the owner and the fix, and declares nothing", async () => {
    const First = handlerFor({ queue: suite.queue }, () => undefined);
    const Second = handlerFor({ queue: `${suite.queue}.b`, errorQueue: `${suite.queue}.dlx.dead` }, () => undefined);
    const app = await createApp([First, Second]);
    await expect(app.init()).rejects.toThrow(
      /option "errorQueue" of TestHandler\.handle is "(e2e\.config\.\w+)\.dlx\.dead", a name the retry topology of "\1" derives .*, which belongs to TestHandler\.handle\. Give it a name outside those of "\1", e\.g\. '\1\.b\.error'/,
    );
    await app.close();
    for (const queue of [suite.queue, `${suite.queue}.b`, `${suite.queue}.dlx.dead`, `${suite.queue}.error`]) {
      expect(await suite.broker.exists(queue)).toBe(false);
    }
  });

  it("fails init when a handler parks in the delay ladder's ready queue, and declares nothing", async () => {
    const Handler = handlerFor({ queue: suite.queue, errorQueue: 'amqp-retry.delay.ready' }, () => undefined);
    const app = await createApp([Handler]);
    await expect(app.init()).rejects.toThrow(
      `option "errorQueue" of TestHandler.handle is "amqp-retry.delay.ready", a name of the delay ladder "amqp-retry.delay" (delayedDelivery)`,
    );
    await app.close();
    expect(await suite.broker.exists(suite.queue)).toBe(false);
  });

  it('fails init with a clear error, not a hang, when a queue exists with other arguments (406)', async () => {
    await suite.broker.declareQueue(suite.queue); // created earlier by someone else, without a dead-letter exchange

    const started = Date.now();
    const app = await createApp([handlerFor({ queue: suite.queue }, () => undefined)]);
    const failure = await app.init().then(
      () => undefined,
      (error: unknown) => error,
    );
    await app.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(failure).toBeInstanceOf(TopologyMismatchError);
    expect((failure as Error).message).toMatch(
      new RegExp(
        `^The queue "${suite.queue}" already exists on the broker with different arguments \\(inequivalent arg 'x-dead-letter-exchange'.*rabbitmqctl delete_queue ${suite.queue}\\) so it is declared anew\\.$`,
      ),
    );
  });

  it('takes new delays without a restart of anything: new tiers, old messages finish the old schedule, old tiers go', async () => {
    const [oldTier] = retryTopologyNames(suite.queue, { delays: [1_500] }).tiers;
    const [newTier] = retryTopologyNames(suite.queue, { delays: [100] }).tiers;
    const before = await startApp([handlerFor({ queue: suite.queue, delays: [1_500] }, () => Promise.reject(new Error('down')))]);
    const failedAt = Date.now();
    await suite.broker.publish('', suite.queue, { id: 'old' });
    await waitFor(async () => (await suite.broker.count(oldTier)) === 1, 'the message in the 1.5 s tier');
    await before.close();

    const Handler = handlerFor({ queue: suite.queue, delays: [100], maxAttempts: 3 }, (payload, ctx) => {
      if ((payload as { id: string }).id === 'new' && ctx.attempt === 1) throw new Error('once');
    });
    const after = await startApp([Handler]); // a changed delay is a new queue, not a 406
    try {
      await suite.broker.publish('', suite.queue, { id: 'new' });
      const calls = handlerOf(after, Handler).calls;
      await waitFor(() => calls.length === 3, 'both messages', 5_000);
      const byId = (id: string) => calls.filter((c) => (c.payload as { id: string }).id === id);
      expect(byId('new').map((c) => c.attempt)).toEqual([1, 2]);
      expect(byId('new')[1].at - byId('new')[0].at).toBeLessThan(1_000); // the new 100 ms tier
      expect(byId('old').map((c) => c.attempt)).toEqual([2]);
      expect(byId('old')[0].at - failedAt).toBeGreaterThanOrEqual(1_500); // the old schedule, kept
      expect(await suite.broker.exists(oldTier)).toBe(true); // it was not empty when this app started
    } finally {
      await after.close();
    }

    const again = await startApp([handlerFor({ queue: suite.queue, delays: [100] }, () => undefined)]);
    await again.close();
    expect(await suite.broker.exists(oldTier)).toBe(false); // empty now: deleted
    expect(await suite.broker.exists(newTier)).toBe(true);
  });

  it('lets a configuration with fewer tiers retire the extra ones, so no message is retried twice', async () => {
    const wideTiers = retryTopologyNames(suite.queue, { delays: [100, 100, 100] }).tiers;
    const wide = await startApp([handlerFor({ queue: suite.queue, delays: [100, 100, 100] }, () => undefined)]);
    await wide.close();

    const Handler = handlerFor({ queue: suite.queue, delays: [100], maxAttempts: 4 }, () => {
      throw new Error('always');
    });
    const app = await startApp([Handler]);
    try {
      for (const tier of wideTiers) expect(await suite.broker.exists(tier)).toBe(false); // empty: deleted at start
      await suite.broker.publish('', suite.queue, { id: 1 });
      await suite.broker.take(`${suite.queue}.error`, 1);
      expect(handlerOf(app, Handler).calls.map((c) => c.attempt)).toEqual([1, 2, 3, 4]);
      await new Promise((resolve) => setTimeout(resolve, 300)); // a duplicate would come back within a tier delay
      expect(handlerOf(app, Handler).calls).toHaveLength(4);
    } finally {
      await app.close();
    }
  });

  it('fails init with the masked URL when the broker is unreachable', async () => {
    const app = await createApp([handlerFor({ queue: suite.queue }, () => undefined)], { ...TEST_OPTIONS, url: 'amqp://guest:s3cret@127.0.0.1:1' });
    const failure = await app.init().catch((error: unknown) => error as Error);
    await app.close();
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(/^Could not connect to RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:1: /);
    expect((failure as Error).message).not.toContain('s3cret');
  });
});
