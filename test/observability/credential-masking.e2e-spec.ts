import { spawn } from 'node:child_process';
import type { INestApplication } from '@nestjs/common';
import { NonRetryableError, RetryConfigError } from 'nestjs-amqp-retry';
import { createApp, handlerFor, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { startDashboardApp } from '../support/dashboard-app.js';
import { SUITE_OPTIONS, useSuite } from '../support/suite.js';
import { buildCli } from '../support/cli.js';

/**
 * A password never leaves the process: not in a configuration error, the CLI's output, the library's log lines, the
 * parked copy's headers, or the parked-messages page and its export. The passwords are the ones a generator makes
 * and nobody percent-encodes.
 */
const HOSTILE = [
  ['a slash', 's3cr/et'],
  ['an at sign', 's3cr@et'],
  ['a colon', 's3cr:et'],
  ['a percent sign', 's3cr%et'],
  ['unicode', 's3crét-密码'],
] as const;

const hostAndPort = new URL(AMQP_URL).host;
const withPassword = (password: string) => `amqp://guest:${password}@${hostAndPort}`;

describe('credentials are masked everywhere they could leave the process', () => {
  describe('configuration errors', () => {
    it.each([
      ['url', (url: string) => ({ options: { ...TEST_OPTIONS, url }, env: {} })],
      ['AMQP_URL', (url: string) => ({ options: 'env' as const, env: { AMQP_URL: url } })],
    ])('a password with an unencoded "/" given as %s is named as such, and masked', async (_where, given) => {
      const { options, env } = given(withPassword('s3cr/et'));
      const saved = process.env.AMQP_URL;
      Object.assign(process.env, env);
      try {
        const failing = createApp([], options);
        await expect(failing).rejects.toThrow(RetryConfigError);
        const message = await failing.then(
          () => '',
          (error: unknown) => (error as Error).message,
        );
        expect(message).toContain(`"amqp://guest:***@${hostAndPort}", which has a '/', '?' or '#' before its last '@'`);
        expect(message).toContain("Percent-encode the user and password (encodeURIComponent): '/' is %2F");
        expect(message).not.toMatch(/s3cr|et@/);
      } finally {
        if (saved === undefined) delete process.env.AMQP_URL;
        else process.env.AMQP_URL = saved;
      }
    });
  });

  describe('the CLI, run as a child process', () => {
    const CLI = 'libs/amqp-retry/dist/esm/ops/cli/main.js';
    const run = (args: string[], env: Record<string, string>) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.on('close', (code) => resolve({ code, out }));
      });

    beforeAll(() => {
      buildCli();
    }, 120_000);

    it.each([
      ['--url', (url: string) => ({ args: ['--url', url], env: {} })],
      ['AMQP_URL', (url: string) => ({ args: [], env: { AMQP_URL: url } })],
    ])('names a password with an unencoded "/" given as %s: a usage error, masked, not "expected amqp:"', async (option, given) => {
      const { args, env } = given(withPassword('s3cr/et'));
      const { code, out } = await run([...args, 'parked', 'list', '--whole-vhost'], env);
      expect(code).toBe(2);
      expect(out).toContain(`error: ${option} is "amqp://guest:***@${hostAndPort}", which has a '/', '?' or '#' before its last '@'`);
      expect(out).not.toMatch(/s3cr|Expected amqp/);
    });

    it.each(HOSTILE.filter(([, password]) => !password.includes('/')))(
      'masks a wrong password with %s in the connection error',
      async (_name, password) => {
        const { code, out } = await run(['parked', 'list', '--whole-vhost'], { AMQP_URL: withPassword(password) });
        expect(code).toBe(1);
        expect(out).toContain(`amqp://guest:***@${hostAndPort}`);
        expect(out).toMatch(/ACCESS.REFUSED/);
        expect(out).not.toContain(password);
      },
    );
  });

  describe('log lines, parked copies and the parked-messages page', () => {
    const suite = useSuite<INestApplication>('e2e.masking');

    it.each(HOSTILE)('a password with %s in a handler error is masked in the logs, the parked copy and the page', async (_name, password) => {
      const leak = `could not reach postgres://billing:${password}@db.internal:5432/billing`;
      const Handler = handlerFor({ queue: suite.queue, delays: [100] }, () => {
        throw new NonRetryableError(leak);
      });
      const logger = new RecordingLogger();
      // The stack logged too (logging.parked 'stack'): it must be masked as well.
      const started = await startDashboardApp([Handler], { path: '/retry', allowUnauthenticated: true }, undefined, undefined, {
        ...SUITE_OPTIONS,
        logging: { parked: 'stack' },
      });
      suite.app = started.app;
      suite.app.useLogger(logger);
      const masked = 'could not reach postgres://billing:***@db.internal:5432/billing';

      // A copy parked by this version: masked when written.
      await suite.broker.publish('', suite.queue, { n: 1 });
      const [copy] = await suite.broker.take(`${suite.queue}.error`, 1, 15_000);
      expect(copy.properties.headers?.['x-exception-message']).toBe(masked);
      await suite.broker.channel.sendToQueue(`${suite.queue}.error`, copy.content, copy.properties);
      // A copy parked by an older version: masked when shown.
      await suite.broker.publish(
        '',
        `${suite.queue}.error`,
        { n: 2 },
        {
          headers: {
            'x-parked-reason': 'non-retryable',
            'x-original-queue': suite.queue,
            'x-exception-message': leak,
            'x-exception-stack': `Error: ${leak}\n    at x`,
          },
        },
      );
      await waitFor(async () => (await suite.broker.count(`${suite.queue}.error`)) === 2, 'two parked copies');

      const get = async (path: string) => {
        const response = await fetch(`${started.url}/retry/api/${path}`);
        expect([path, response.status, response.status === 200 ? '' : await response.clone().text()]).toEqual([path, 200, '']);
        return response.text();
      };
      const list = await get(`messages?queue=${encodeURIComponent(suite.queue)}`);
      const page = JSON.parse(list) as { items: Array<{ id: string; error: string }> };
      expect(page.items.map((m) => m.error)).toEqual([masked, masked]);
      const shown = await Promise.all(
        page.items.map(({ id }) => get(`messages/${encodeURIComponent(`${suite.queue}.error`)}/${encodeURIComponent(id)}`)),
      );
      const summary = await get(`summary?queue=${encodeURIComponent(suite.queue)}`);
      const exported = await get(`export?errorQueue=${encodeURIComponent(`${suite.queue}.error`)}`);
      expect(exported.trim().split('\n')).toHaveLength(2);
      for (const text of [list, ...shown, summary, exported, logger.lines.join('\n')]) {
        expect(text).not.toContain(`:${password}@`);
        expect(text).not.toContain(password);
      }
      expect(summary).toContain(masked);
      expect(logger.count(/^warn Parked a message/)).toBe(1);
      expect(logger.lines.join('\n')).toContain(`NonRetryableError: ${masked}`);
      expect(logger.lines.join('\n')).toContain('postgres://billing:***@db.internal');
    });
  });
});
