import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');

/**
 * Run before every test file, in Jest's own realm: keeps Node's own promise timers, `AbortSignal.timeout` and
 * `performance.now` on the module object of `node:timers/promises`, which every test file of the process shares.
 */
const GLOBAL_SETUP = `
module.exports = () => {
  const timers = require('node:timers/promises');
  timers[Symbol.for('fixture.real')] = {
    setTimeout: timers.setTimeout,
    setInterval: timers.setInterval,
    wait: timers.scheduler.wait,
    timeout: AbortSignal.timeout,
    now: Object.getOwnPropertyDescriptor(performance, 'now'),
  };
};
`;

/** Runs the test files in the order of their names. */
const SEQUENCER = `
const Sequencer = require(${JSON.stringify(join(repo, 'node_modules/@jest/test-sequencer'))}).default;
module.exports = class extends Sequencer {
  sort(tests) {
    return [...tests].sort((a, b) => a.path.localeCompare(b.path));
  }
};
`;

/** A test file that starts a harness and never closes it (a forgotten afterAll, or a hook that timed out before it). */
const FORGETFUL = `
import { Module } from '@nestjs/common';
import { RetryModule } from 'nestjs-amqp-retry';
import { RetryHarness } from 'nestjs-amqp-retry/testing';

@Module({ imports: [RetryModule.forRoot({})] })
class AppModule {}

it('starts a harness and never closes it', async () => {
  await RetryHarness.start(AppModule);
});
`;

/** The test file Jest runs next in the same process. */
const NEXT = `
import { Module } from '@nestjs/common';
import { createRequire } from 'node:module';
import type * as TimersPromises from 'node:timers/promises';
import { RetryModule } from 'nestjs-amqp-retry';
import { RetryHarness } from 'nestjs-amqp-retry/testing';

const timers = createRequire(import.meta.url)('node:timers/promises') as typeof TimersPromises;
const real = (timers as unknown as Record<symbol, Record<string, unknown>>)[Symbol.for('fixture.real')];
const nodeTimers = createRequire(import.meta.url)('node:timers') as typeof import('node:timers');
const within = <T>(ms: number, promise: Promise<T>) =>
  Promise.race([promise, new Promise((resolve) => nodeTimers.setTimeout(() => resolve('stuck'), ms))]);

@Module({ imports: [RetryModule.forRoot({})] })
class AppModule {}

it('finds node:timers/promises, AbortSignal.timeout and performance.now keeping real time', async () => {
  const signal = AbortSignal.timeout(20);
  const before = performance.now();
  expect(await within(1_000, timers.setTimeout(20, 'slept'))).toBe('slept');
  expect(await within(1_000, timers.scheduler.wait(1).then(() => 'waited'))).toBe('waited');
  expect(signal.aborted).toBe(true);
  expect(performance.now() - before).toBeGreaterThanOrEqual(15);
});

it('starts and closes a harness of its own, which puts back Node’s own', async () => {
  const harness = await RetryHarness.start(AppModule);
  await harness.close();
  expect({
    setTimeout: timers.setTimeout,
    setInterval: timers.setInterval,
    wait: timers.scheduler.wait,
    timeout: AbortSignal.timeout,
    now: Object.getOwnPropertyDescriptor(performance, 'now'),
  }).toEqual(real);
});
`;

interface JestReport {
  testResults: { name: string; assertionResults: { title: string; status: string; failureMessages: string[] }[] }[];
}

describe('a harness left running by one test file, and the next file Jest runs in the same process', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'harness-test-files-'));
    await symlink(join(repo, 'node_modules'), join(dir, 'node_modules'));
    await writeFile(join(dir, 'package.json'), '{ "type": "module" }');
    await writeFile(join(dir, 'global-setup.cjs'), GLOBAL_SETUP);
    await writeFile(join(dir, 'sequencer.cjs'), SEQUENCER);
    await writeFile(join(dir, 'a.files-spec.ts'), FORGETFUL);
    await writeFile(join(dir, 'b.files-spec.ts'), NEXT);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('leaves that file its real timers, and its own harness puts back the real ones', async () => {
    const config = {
      rootDir: repo,
      roots: [dir],
      testMatch: ['**/*.files-spec.ts'],
      testEnvironment: 'node',
      extensionsToTreatAsEsm: ['.ts'],
      transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: join(repo, 'tsconfig.json') }] },
      modulePathIgnorePatterns: ['<rootDir>/libs/amqp-retry/dist/'],
      moduleNameMapper: {
        '^nestjs-amqp-retry$': '<rootDir>/libs/amqp-retry/src/index.ts',
        '^nestjs-amqp-retry/testing$': '<rootDir>/libs/amqp-retry/src/testing/index.ts',
        '^(\\.{1,2}/.*)\\.js$': '$1',
      },
      globalSetup: join(dir, 'global-setup.cjs'),
      testSequencer: join(dir, 'sequencer.cjs'),
      forceExit: true,
    };
    const output = join(dir, 'report.json');
    const args = ['--experimental-vm-modules', '--no-warnings=ExperimentalWarning', join(repo, 'node_modules/jest/bin/jest.js')];
    args.push('--config', JSON.stringify(config), '--runInBand', '--ci', '--json', '--outputFile', output);
    await new Promise<void>((done) => execFile(process.execPath, args, { cwd: repo, timeout: 150_000 }, () => done()));
    const report = JSON.parse(await readFile(output, 'utf8')) as JestReport;
    const results = report.testResults
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap((file) => file.assertionResults.map((test) => [test.title, test.status, test.failureMessages.join('\n').slice(0, 600)]));
    expect(results).toEqual([
      ['starts a harness and never closes it', 'passed', ''],
      ['finds node:timers/promises, AbortSignal.timeout and performance.now keeping real time', 'passed', ''],
      ['starts and closes a harness of its own, which puts back Node’s own', 'passed', ''],
    ]);
  }, 180_000);
});
