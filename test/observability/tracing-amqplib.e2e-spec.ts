import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

const run = promisify(execFile);
const root = process.cwd();
const built = join(root, 'node_modules/.cache', uniqueName('nestjs-amqp-retry-otel'));

interface SpanSeen {
  name: string;
  kind: number;
  scope: string;
  traceId: string;
  spanId: string;
  parent?: string;
  attributes: Record<string, unknown>;
}

const PRODUCER = 3;
const CONSUMER = 4;

/**
 * Beside @opentelemetry/instrumentation-amqplib, in a plain Node ESM process (jest loads modules itself, so the
 * instrumentation cannot patch amqplib inside it): the library built to JavaScript, the SDK and the instrumentation
 * registered before the library loads amqplib, as an application's main would.
 */
describe('tracing beside @opentelemetry/instrumentation-amqplib', () => {
  const suite = useSuite('obs.otel.amqplib', { afterAll: () => rm(built, { recursive: true, force: true }) });
  beforeAll(async () => {
    await run(
      process.execPath,
      [
        join(root, 'node_modules/typescript/bin/tsc'),
        '-p',
        'libs/amqp-retry/tsconfig.lib.json',
        '--outDir',
        built,
        '--declaration',
        'false',
        '--sourceMap',
        'false',
        '--inlineSources',
        'false',
      ],
      {
        cwd: root,
      },
    );
    await mkdir(built, { recursive: true });
    await writeFile(join(built, 'package.json'), '{"type":"module"}'); // below node_modules, .js is CommonJS without it
  }, 120_000);

  for (const [mode, flags] of [
    ['without a loader hook', []],
    ['with the import-in-the-middle hook', ['--import', '@opentelemetry/instrumentation/hook.mjs']],
  ] as const) {
    it(`gives one consumer span per attempt (the instrumentation's, with our attributes), all in one trace, ${mode}`, async () => {
      const { queue } = suite;
      const { stdout } = await run(process.execPath, [...flags, 'test/observability/fixtures/amqplib-instrumented.mjs', built, AMQP_URL, queue], {
        cwd: root,
        timeout: 30_000,
      });
      const { calls, spans } = JSON.parse(stdout) as { calls: number[]; spans: SpanSeen[] };
      expect(calls).toEqual([1, 2]);
      const request = spans.find((s) => s.name === 'request')!;
      const ours = spans.find((s) => s.scope === 'nestjs-amqp-retry' && s.kind === PRODUCER)!;
      expect(ours.parent).toBe(request.spanId);
      // The instrumentation's publish of our message nests under our producer span: one chain, not two siblings.
      const theirs = spans.filter(
        (s) => s.scope === '@opentelemetry/instrumentation-amqplib' && s.kind === PRODUCER && s.traceId === request.traceId,
      );
      expect(theirs).toHaveLength(1);
      expect(theirs[0].parent).toBe(ours.spanId);
      // No second consumer span: ours is not made, theirs carries the attempt.
      const consumers = spans.filter((s) => s.kind === CONSUMER);
      expect(consumers).toHaveLength(2);
      expect(consumers.every((s) => s.scope === '@opentelemetry/instrumentation-amqplib')).toBe(true);
      expect(consumers.map((s) => s.attributes['amqp_retry.attempt']).sort()).toEqual([1, 2]);
      for (const consumer of consumers) {
        expect(consumer.traceId).toBe(request.traceId);
        expect(consumer.parent).toBe(theirs[0].spanId);
        expect(consumer.attributes['messaging.message.id']).toBe('m-1');
        const work = spans.find((s) => s.name === `user work ${String(consumer.attributes['amqp_retry.attempt'])}`)!;
        expect(work.parent).toBe(consumer.spanId); // the handler runs in the consumer span's context
      }
    });
  }
});
