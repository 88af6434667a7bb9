import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { QueueControl, RetryEngine } from 'nestjs-amqp-retry';
import { CONTROL_EXCHANGE } from '../../libs/amqp-retry/src/core/breaker/control.message.js';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { ctl } from '../support/broker-control.js';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { buildCli } from '../support/cli.js';

const CLI = 'libs/amqp-retry/dist/esm/ops/cli/main.js';

/** Runs the built `amqp-retry` bin in a process of its own, as an operator would. */
function cli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, AMQP_URL }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('pause and resume from another process: the CLI and QueueControl', () => {
  const suite = useSuite('e2e.control');

  beforeAll(() => {
    buildCli();
  }, 120_000);

  it('`amqp-retry pause` stops a running application consuming the queue; `resume` starts it again', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue }, () => undefined);
    const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, application: 'orders-service' }));
    const logger = new RecordingLogger();
    app.useLogger(logger);

    const paused = await cli('pause', '--queue', queue, '--by', 'alice', '--reason', 'INC-142 payments down', '--wait', '1000');
    expect(paused.stderr).toBe('');
    expect(paused.code).toBe(0);
    expect(paused.stdout).toMatch(
      new RegExp(`pid \\d+ \\(orders-service\\): "${queue.replace(/\./g, '\\.')}" is paused by alice since \\S+ \\(INC-142 payments down\\)`),
    );
    expect(app.get(RetryEngine).queueStates()[0]).toMatchObject({ state: 'paused', paused: { by: 'alice', reason: 'INC-142 payments down' } });
    await waitFor(async () => (await broker.consumers(queue)) === 0, 'the consumer cancelled');
    await broker.publish('', queue, { n: 1 });
    // The broker-validated user the CLI sent it as, beside the `by` it claims.
    expect(logger.lines).toContain(
      `warn Queue "${queue}" is now paused: paused by alice (a command sent as broker user "guest"): INC-142 payments down`,
    );

    const resumed = await cli('resume', '--queue', queue, '--by', 'bob', '--json');
    expect(resumed.code).toBe(0);
    const outcome = JSON.parse(resumed.stdout) as { routed: boolean; replies: Array<{ status: { state: string } }> };
    expect(outcome).toMatchObject({ routed: true, replies: [{ status: { queue, state: 'running' } }] });
    await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the message handled after the resume');
  });

  it('says so, and changes nothing, when no running application consumes the queue', async () => {
    const { queue } = suite;
    const result = await cli('pause', '--queue', `${queue}.nobody`, '--by', 'alice');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`error: no running application consumes "${queue}.nobody"`);
  });

  it('refuses a bad --by before connecting', async () => {
    const { queue } = suite;
    const result = await cli('pause', '--queue', queue, '--by', 'x\u001b[2J', '--url', 'amqp://127.0.0.1:1');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--by must be printable text');
  });

  it('refuses a user who may not write to the control exchange (the queue keeps running); an operator needs write on it only', async () => {
    const { queue } = suite;
    const app = (suite.app = await startApp([handlerFor({ queue }, () => undefined)], TEST_OPTIONS));
    const user = `e2e-${randomUUID().slice(0, 8)}`;
    await ctl('add_user', user, 'secret');
    try {
      await ctl('set_permissions', '-p', '/', user, '^$', `^(?!${CONTROL_EXCHANGE.replace(/\./g, '\\.')}$).*`, '.*');
      const control = QueueControl.create({ url: AMQP_URL.replace('guest:guest', `${user}:secret`) });
      await expect(control.pause(queue, { by: 'mallory' }, 500)).rejects.toThrow(/ACCESS_REFUSED|403/);
      expect(app.get(RetryEngine).queueStates()[0].state).toBe('running');

      // An operator needs no more than write on the control exchange: no configure, no read.
      await ctl('set_permissions', '-p', '/', user, '^$', `^${CONTROL_EXCHANGE.replace(/\./g, '\\.')}$`, '^$');
      const logger = new RecordingLogger();
      app.useLogger(logger);
      const operator = await control.pause(queue, { by: 'operator' }, 1_000);
      expect(operator.replies.map((r) => r.status?.state)).toEqual(['paused']);
      expect(logger.lines).toContain(`warn Queue "${queue}" is now paused: paused by operator (a command sent as broker user "${user}")`);
    } finally {
      await ctl('delete_user', user);
    }
  });

  it('reaches every instance that consumes the queue, from code too (QueueControl); a malformed command is ignored', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue }, () => undefined);
    const app = (suite.app = await startApp([Handler], TEST_OPTIONS));
    const second = await startApp([handlerFor({ queue }, () => undefined)], TEST_OPTIONS); // another instance
    const logger = new RecordingLogger();
    app.useLogger(logger);
    try {
      broker.channel.publish(CONTROL_EXCHANGE, queue, Buffer.from('{"command":"pause","queue":"someone else"}'), { userId: 'guest' });
      // Nest's logger is one per process: both instances log into it.
      await waitFor(() => logger.count(/Ignored a control message/) === 2, 'the malformed command ignored by both instances');
      expect(logger.lines).toContain(
        `warn Ignored a control message for "${queue}" from broker user "guest": queue must be the routing key the command was sent with (at most one such line a minute)`,
      );
      // Well-formed, but without a userId the broker checked: whoever sent it is unknown.
      broker.channel.publish(CONTROL_EXCHANGE, queue, Buffer.from(JSON.stringify({ command: 'pause', queue, by: 'alice (on-call)' })));
      await waitFor(() => logger.count(/without a broker-validated user/) === 2, 'the unverified command ignored by both instances');
      expect(app.get(RetryEngine).queueStates()[0].state).toBe('running');

      const control = QueueControl.create({ url: AMQP_URL });
      const outcome = await control.pause(queue, { by: 'deploy-bot' }, 1_000);
      expect(outcome.routed).toBe(true);
      expect(outcome.replies.map((r) => r.status?.state)).toEqual(['paused', 'paused']);
      await waitFor(async () => (await broker.consumers(queue)) === 0, 'both consumers cancelled');
      expect((await control.resume(queue, { by: 'deploy-bot' }, 1_000)).replies).toHaveLength(2);
      await waitFor(async () => (await broker.consumers(queue)) === 2, 'both consumers back');
    } finally {
      await second.close();
    }
  });
});
