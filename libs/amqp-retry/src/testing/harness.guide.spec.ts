import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { jest } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryPublisher } from '../nest/retry.publisher.js';
import { RetryHarness } from './retry.harness.js';

/** Real time for the test's own measure, taken before Jest's fake timers freeze process.hrtime and performance. */
const realNow = performance.now.bind(performance);

/** The guide's example (docs/testing-your-handlers.md), word for word where it can be, with Jest's fake timers on. */
@Injectable()
class PaymentGateway {
  async charge(_order: unknown): Promise<void> {
    throw new Error('the real gateway is not called in a unit test');
  }
}

@Injectable()
class PaymentHandler {
  constructor(private readonly gateway: PaymentGateway) {}

  @RetryWithBackoff({ queue: 'payments', exchange: 'shop', routingKey: 'order.created', delays: ['1s', '10s', '1m'], maxAttempts: 5 })
  async onOrder(order: { id: number }): Promise<void> {
    await this.gateway.charge(order);
  }

  @RetryWithBackoff({ queue: 'reminders', exchange: 'shop', routingKey: 'reminder.due' })
  onReminder(): void {}
}

@Module({ imports: [RetryModule.forRoot({})], providers: [PaymentGateway, PaymentHandler] })
class AppModule {}

describe('the testing guide, with Jest fake timers on', () => {
  const gateway = { charge: jest.fn<(order: unknown) => Promise<void>>() };
  let harness: RetryHarness;

  beforeAll(async () => {
    jest.useFakeTimers();
    harness = await RetryHarness.start(
      Test.createTestingModule({ imports: [AppModule] })
        .overrideProvider(PaymentGateway)
        .useValue(gateway),
    );
  });
  afterAll(async () => {
    await harness.close();
    jest.useRealTimers();
  });

  it('retries a failed payment three times; the fourth attempt succeeds', async () => {
    gateway.charge
      .mockRejectedValueOnce(new Error('timeout'))
      .mockRejectedValueOnce(new Error('timeout'))
      .mockRejectedValueOnce(new Error('timeout'))
      .mockResolvedValue(undefined);
    const { messageId } = harness.publish('shop', 'order.created', { id: 42, amountCents: 1000 });
    const real = realNow();

    await harness.settle();

    expect(harness.attempts(messageId).map((a) => [a.attempt, a.at, a.tier, a.outcome])).toEqual([
      [1, 0, undefined, 'retried'],
      [2, 1_000, 1, 'retried'],
      [3, 11_000, 2, 'retried'],
      [4, 71_000, 3, 'handled'],
    ]);
    expect(realNow() - real).toBeLessThan(1_000);
  });

  it('parks a malformed order at once', async () => {
    harness.publish('shop', 'order.created', '{not json', { contentType: 'application/json', messageId: 'bad-1' });
    await harness.settle();
    expect(harness.parked('payments')).toContainEqual(expect.objectContaining({ messageId: 'bad-1', reason: 'malformed' }));
  });

  it('delivers the reminder after 30 minutes, not before', async () => {
    await harness.application.get(RetryPublisher).publish('shop', 'reminder.due', { id: 42 }, { delay: '30m' });
    await harness.advance('29m59s');
    expect(harness.handled('reminders')).toHaveLength(0);
    await harness.advance('1s');
    expect(harness.handled('reminders')).toHaveLength(1);
  });

  it('reports a nacked confirm to the publisher, and reconnects after a lost connection', async () => {
    harness.failures.refuseConfirms(1, { routingKey: 'reminder.due' });
    await expect(harness.application.get(RetryPublisher).publish('shop', 'reminder.due', { id: 43 })).rejects.toThrow();
    expect(harness.published({ routingKey: 'reminder.due' }).at(-1)?.confirmed).toBe(false);

    harness.failures.loseConnections(5_000);
    await harness.advance('1m');
    const { messageId } = harness.publish('shop', 'order.created', { id: 44 });
    await harness.settle();
    expect(harness.attempts(messageId).map((a) => a.outcome)).toEqual(['handled']);
  });
});

/** The guide's code blocks that are whole files (they start with their imports). */
const guideFiles = (): string[] => {
  const guide = readFileSync(new URL('../../../../docs/testing-your-handlers.md', import.meta.url), 'utf8');
  return [...guide.matchAll(/```ts\n([\s\S]*?)```/g)].map((block) => block[1]).filter((code) => code.startsWith('import '));
};

/**
 * TypeScript's "cannot find name" errors in each of `codes`, type-checked together as Jest test files of the repository
 * (modules they import that do not resolve are left out): one list per file.
 */
const unknownNames = (codes: string[]): string[][] => {
  const files = codes.map((_, i) => fileURLToPath(new URL(`../../../../docs/guide-${i}.snippet.spec.ts`, import.meta.url)));
  const code = (name: string) => codes[files.indexOf(name)];
  const options: ts.CompilerOptions = { strict: true, noEmit: true, types: ['jest', 'node'], experimentalDecorators: true, skipLibCheck: true };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, version, ...rest) =>
    files.includes(name) ? ts.createSourceFile(name, code(name), version) : getSourceFile.call(host, name, version, ...rest);
  host.fileExists = (name) => files.includes(name) || fileExists.call(host, name);
  host.readFile = (name) => (files.includes(name) ? code(name) : readFile.call(host, name));
  const program = ts.createProgram(files, options, host);
  const cannotFind = new Set([2304, 2552, 2582]);
  return files.map((file) =>
    ts
      .getPreEmitDiagnostics(program, program.getSourceFile(file))
      .filter((diagnostic) => cannotFind.has(diagnostic.code))
      .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')),
  );
};

describe('the testing guide: its whole-file examples', () => {
  it('import every name they use', () => {
    const files = guideFiles();
    expect(files.length).toBeGreaterThanOrEqual(2);
    expect(unknownNames(files)).toEqual(files.map(() => []));
  }, 30_000);
});
