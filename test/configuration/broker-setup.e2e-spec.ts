import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCRIPT = join(process.cwd(), 'scripts/ensure-broker.sh');
/** The target the script may act on: the local node on the default port (the broker every e2e test here uses too). */
const LOCAL_URL = 'amqp://guest:guest@127.0.0.1:5672';

/** Whether something listens on 127.0.0.1:5672: the script then takes the broker as found, and starts nothing. */
const localBrokerUp = () =>
  new Promise<boolean>((resolve) => {
    const socket = connect(5672, '127.0.0.1', () => resolve(!!socket.end()));
    socket.on('error', () => resolve(false));
  });

/**
 * Runs scripts/ensure-broker.sh with RabbitMQ's command-line tools (and docker) replaced by recorders on PATH:
 * `rabbitmq-plugins list` prints `enabled`; every call of every tool is recorded. Nothing reaches the real broker but
 * the script's TCP probe.
 */
async function runScript(enabled: string[], env: Record<string, string> = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'ensure-broker-'));
  try {
    const calls = join(dir, 'calls.log');
    const tool = (name: string, body = '') => `#!/bin/sh\necho "${name} $*" >>"${calls}"\n${body}\n`;
    const tools: Record<string, string> = {
      'rabbitmq-plugins': tool('rabbitmq-plugins', `case "$*" in *list*) printf '%s\\n' ${enabled.map((p) => `'${p}'`).join(' ')} ;; esac; exit 0`),
      'rabbitmq-server': tool('rabbitmq-server'),
      rabbitmqctl: tool('rabbitmqctl'),
      'rabbitmq-diagnostics': tool('rabbitmq-diagnostics'),
      docker: tool('docker', 'exit 1'),
    };
    for (const [name, text] of Object.entries(tools)) {
      await writeFile(join(dir, name), text);
      await chmod(join(dir, name), 0o755);
    }
    const result = await new Promise<{ code: number; out: string }>((resolve) => {
      execFile(
        'bash',
        [SCRIPT],
        { env: { PATH: `${dir}:${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: dir, AMQP_URL: LOCAL_URL, ...env }, timeout: 60_000 },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, out: `${stdout}${stderr}` }),
      );
    });
    const recorded = await readFile(calls, 'utf8').catch(() => '');
    return { ...result, calls: recorded.split('\n').filter(Boolean) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** npm start, npm test and CI reach the broker through scripts/ensure-broker.sh: what it may change on a broker it found. */
describe('scripts/ensure-broker.sh and a broker it did not start', () => {
  beforeAll(async () => {
    if (!(await localBrokerUp()))
      throw new Error('these tests need the local broker at 127.0.0.1:5672 (the one the e2e tests use): start it with npm run broker');
  });

  it('leaves the plugins of a running broker alone, and says what to enable', async () => {
    const { code, out, calls } = await runScript(['rabbitmq_management']);
    expect(code).toBe(0);
    expect(calls).toEqual(['rabbitmq-plugins -q list -e -m']);
    expect(out).toContain('the plugin rabbitmq_consistent_hash_exchange is off on the broker at 127.0.0.1:5672');
    expect(out).toContain('enable it with `rabbitmq-plugins enable rabbitmq_consistent_hash_exchange`');
    expect(out).toContain('ENABLE_BROKER_PLUGINS=1');
  });

  it('says nothing more when the plugin is already on', async () => {
    const { code, out, calls } = await runScript(['rabbitmq_consistent_hash_exchange']);
    expect({ code, calls, note: out.includes('rabbitmq_consistent_hash_exchange') }).toEqual({
      code: 0,
      calls: ['rabbitmq-plugins -q list -e -m'],
      note: false,
    });
  });

  it('enables the plugin when asked to (ENABLE_BROKER_PLUGINS=1, as CI does)', async () => {
    const { code, out, calls } = await runScript([], { ENABLE_BROKER_PLUGINS: '1' });
    expect(code).toBe(0);
    expect(calls).toEqual(['rabbitmq-plugins -q list -e -m', 'rabbitmq-plugins -q enable rabbitmq_consistent_hash_exchange']);
    expect(out).toContain('enabled the plugin rabbitmq_consistent_hash_exchange');
  });
});
