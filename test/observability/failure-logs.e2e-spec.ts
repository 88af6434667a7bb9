import { Catch, Injectable, UseFilters, type ArgumentsHost, type ExceptionFilter, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { NonRetryableError, RetryModule, RetryWithBackoff, type RetryContext, type RetryModuleOptions } from 'nestjs-amqp-retry';
import { TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { useSuite, type Suite } from '../support/suite.js';

interface Entry {
  level: string;
  context: string;
  text: string;
}

/** Every line the application logs, with its level and context. */
class CapturingLogger implements LoggerService {
  readonly entries: Entry[] = [];
  private push(level: string, message: unknown, rest: unknown[]): void {
    const context = typeof rest[rest.length - 1] === 'string' ? String(rest[rest.length - 1]) : '';
    const text = [
      message instanceof Error ? `${message.message}\n${message.stack}` : String(message),
      ...rest
        .slice(0, -1)
        .filter((r) => r !== undefined)
        .map(String),
    ].join('\n');
    this.entries.push({ level, context, text });
  }
  log = (m: unknown, ...rest: unknown[]) => this.push('log', m, rest);
  warn = (m: unknown, ...rest: unknown[]) => this.push('warn', m, rest);
  error = (m: unknown, ...rest: unknown[]) => this.push('error', m, rest);
  debug = (m: unknown, ...rest: unknown[]) => this.push('debug', m, rest);
  verbose = (m: unknown, ...rest: unknown[]) => this.push('verbose', m, rest);
  fatal = (m: unknown, ...rest: unknown[]) => this.push('fatal', m, rest);
}

/** The user's own filter: records every error and rethrows it, so the engine still decides. */
@Catch()
class RecordingFilter implements ExceptionFilter {
  constructor(private readonly into: string[]) {}
  catch(exception: unknown, _host: ArgumentsHost): never {
    this.into.push(exception instanceof Error ? exception.message : String(exception));
    throw exception;
  }
}

function failingHandler(queue: string, seenByFilter?: string[]) {
  @Injectable()
  @UseFilters(...(seenByFilter ? [new RecordingFilter(seenByFilter)] : []))
  class Failing {
    calls = 0;
    @RetryWithBackoff({ queue, delays: ['50ms'], maxAttempts: 2 })
    async handle(_payload: unknown, ctx: RetryContext): Promise<void> {
      this.calls++;
      throw new Error(`boom on attempt ${ctx.attempt}`);
    }
  }
  return Failing;
}

/** Runs a failing handler on the suite's queue until its message is parked: what was logged, and the parked copy's headers. */
async function runFlow(suite: Suite, logging: RetryModuleOptions['logging'], withFilter = false) {
  const { broker, queue } = suite;
  const seenByFilter: string[] = [];
  const Failing = failingHandler(queue, withFilter ? seenByFilter : undefined);
  const logger = new CapturingLogger();
  const app = (suite.app = await Test.createTestingModule({
    imports: [RetryModule.forRoot({ ...TEST_OPTIONS, logging })],
    providers: [Failing],
  }).compile());
  app.useLogger(logger);
  await app.init();
  await broker.publish('', queue, { n: 1 }, { messageId: 'logs-1' });
  const [copy] = await broker.take(`${queue}.error`, 1);
  await waitFor(() => logger.entries.some((e) => e.text.startsWith('Parked a message')), 'the park line');
  const parked = copy.properties.headers ?? {};
  return { entries: logger.entries.filter((e) => e.context !== 'InstanceLoader' && e.context !== 'NestFactory'), seenByFilter, queue, parked };
}

describe('failure logs', () => {
  const suite = useSuite('obs.logs');

  it('default: one warning per retry, one warning line when parked (the stack only in the parked copy), no ExceptionsHandler stacks', async () => {
    const { entries, queue, parked } = await runFlow(suite, undefined);
    expect(entries.filter((e) => e.context === 'ExceptionsHandler')).toEqual([]);
    const retries = entries.filter((e) => e.text.includes('failed: boom'));
    expect(retries).toEqual([{ level: 'warn', context: 'RetryModule', text: `"${queue}" attempt 1/2 failed: boom on attempt 1; retrying in 50ms` }]);
    const parks = entries.filter((e) => e.text.startsWith('Parked a message'));
    expect(parks).toEqual([
      {
        level: 'warn',
        context: 'RetryModule',
        text: `Parked a message from "${queue}" in "${queue}.error" (exhausted after 2 attempts, message id "logs-1", parked id "${parked['x-parked-id']}"): boom on attempt 2`,
      },
    ]);
    expect(String(parked['x-exception-stack'])).toMatch(/^Error: boom on attempt 2\n\s+at /);
    expect(entries.filter((e) => e.level === 'error')).toEqual([]);
  });

  it('default: 40 NonRetryableError parks make 40 log lines, each one warning line', async () => {
    const { broker, queue } = suite;
    @Injectable()
    class Refusing {
      @RetryWithBackoff({ queue })
      async handle(): Promise<void> {
        throw new NonRetryableError('unknown customer');
      }
    }
    const logger = new CapturingLogger();
    const app = (suite.app = await Test.createTestingModule({ imports: [RetryModule.forRoot(TEST_OPTIONS)], providers: [Refusing] }).compile());
    app.useLogger(logger);
    await app.init();
    const before = logger.entries.length;
    for (let n = 0; n < 40; n++) await broker.publish('', queue, { n }, { messageId: `refused-${n}` });
    await broker.take(`${queue}.error`, 40, 20_000);
    await waitFor(() => logger.entries.filter((e) => e.text.startsWith('Parked a message')).length === 40, 'the 40 park lines');
    await new Promise((resolve) => setTimeout(resolve, 200)); // a settle window: no further line
    const lines = logger.entries.slice(before).flatMap((e) => e.text.split('\n').map((text) => `${e.level} ${text}`));
    expect(lines).toHaveLength(40);
    expect(
      lines.filter((line) =>
        /^warn Parked a message from "[^"]+" in "[^"]+" \(non-retryable after 1 attempt, message id "refused-\d+", parked id "[0-9a-f-]{36}"\): unknown customer$/.test(
          line,
        ),
      ),
    ).toHaveLength(40);
  });

  it("logging.parked 'stack': the park's warning line is followed by the handler's stack", async () => {
    const { entries, queue, parked } = await runFlow(suite, { parked: 'stack' });
    const parks = entries.filter((e) => e.text.startsWith('Parked a message'));
    expect(parks.map((e) => e.level)).toEqual(['warn']);
    const [line, ...stack] = parks[0].text.split('\n');
    expect(line).toBe(
      `Parked a message from "${queue}" in "${queue}.error" (exhausted after 2 attempts, message id "logs-1", parked id "${parked['x-parked-id']}"): boom on attempt 2`,
    );
    expect(stack[0]).toBe('Error: boom on attempt 2');
    expect(stack.length).toBeGreaterThan(1);
    expect(stack.slice(1).filter((l) => !l.trim().startsWith('at '))).toEqual([]);
  });

  it("default ('line'): the application's own exception filter still sees every failure", async () => {
    const { seenByFilter, entries } = await runFlow(suite, undefined, true);
    expect(seenByFilter).toEqual(['boom on attempt 1', 'boom on attempt 2']);
    expect(entries.filter((e) => e.text.includes('failed: boom'))).toHaveLength(1);
  });

  it("'nest': Nest's ExceptionsHandler logs each failure with its stack, the retry line is debug", async () => {
    const { entries, seenByFilter } = await runFlow(suite, { retries: 'nest' });
    const nest = entries.filter((e) => e.context === 'ExceptionsHandler');
    expect(nest).toHaveLength(2);
    expect(nest[0].text).toContain('boom on attempt 1');
    expect(entries.find((e) => e.text.includes('attempt 1/2 failed'))?.level).toBe('debug');
    expect(entries.find((e) => e.text.startsWith('Parked a message'))?.level).toBe('warn');
    expect(seenByFilter).toEqual([]);
  });

  it('refuses an unknown logging mode, naming the option', async () => {
    await expect(
      Test.createTestingModule({ imports: [RetryModule.forRoot({ ...TEST_OPTIONS, logging: { retries: 'loud' as 'line' } })] }).compile(),
    ).rejects.toThrow(/RetryModule option "logging.retries" is "loud"/);
  });
});
