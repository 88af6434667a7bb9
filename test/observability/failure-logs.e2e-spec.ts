import {
  Catch,
  Injectable,
  UseFilters,
  type ArgumentsHost,
  type ExceptionFilter,
  type INestApplicationContext,
  type LoggerService,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RetryModule, RetryWithBackoff, type RetryContext, type RetryModuleOptions } from 'nestjs-amqp-retry';
import { TEST_OPTIONS } from '../support/app.js';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';

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

async function runFlow(logging: RetryModuleOptions['logging'], withFilter = false) {
  const queue = uniqueName('obs.logs');
  const seenByFilter: string[] = [];
  const Failing = failingHandler(queue, withFilter ? seenByFilter : undefined);
  const logger = new CapturingLogger();
  const broker = await TestBroker.connect();
  let app: INestApplicationContext | undefined;
  try {
    app = await Test.createTestingModule({ imports: [RetryModule.forRoot({ ...TEST_OPTIONS, logging })], providers: [Failing] }).compile();
    app.useLogger(logger);
    await app.init();
    await broker.publish('', queue, { n: 1 });
    await broker.take(`${queue}.error`, 1);
    await waitFor(() => logger.entries.some((e) => e.text.startsWith('Parked a message')), 'the park line');
    return { entries: logger.entries.filter((e) => e.context !== 'InstanceLoader' && e.context !== 'NestFactory'), seenByFilter, queue };
  } finally {
    await app?.close();
    await broker.deleteRetryTopology(queue);
    await broker.close();
  }
}

describe('failure logs', () => {
  it("default ('line'): one warning per retry, one error with the stack when parked, no ExceptionsHandler stacks", async () => {
    const { entries, queue } = await runFlow(undefined);
    expect(entries.filter((e) => e.context === 'ExceptionsHandler')).toEqual([]);
    const retries = entries.filter((e) => e.text.includes('failed: boom'));
    expect(retries).toEqual([{ level: 'warn', context: 'RetryModule', text: `"${queue}" attempt 1/2 failed: boom on attempt 1; retrying in 50ms` }]);
    const parks = entries.filter((e) => e.text.startsWith('Parked a message'));
    expect(parks).toHaveLength(1);
    expect(parks[0].level).toBe('error');
    const [line, ...stack] = parks[0].text.split('\n');
    expect(line).toBe(`Parked a message from "${queue}" in "${queue}.error" (exhausted after 2 attempts): boom on attempt 2`);
    expect(stack[0]).toBe('Error: boom on attempt 2');
    expect(stack.length).toBeGreaterThan(1);
    expect(stack.slice(1).filter((l) => !l.trim().startsWith('at '))).toEqual([]);
  });

  it("default ('line'): the application's own exception filter still sees every failure", async () => {
    const { seenByFilter, entries } = await runFlow(undefined, true);
    expect(seenByFilter).toEqual(['boom on attempt 1', 'boom on attempt 2']);
    expect(entries.filter((e) => e.text.includes('failed: boom'))).toHaveLength(1);
  });

  it("'nest': Nest's ExceptionsHandler logs each failure with its stack, the retry line is debug", async () => {
    const { entries, seenByFilter } = await runFlow({ retries: 'nest' });
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
