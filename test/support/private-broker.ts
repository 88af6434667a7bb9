import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import { BrokerControl } from './broker-control.js';
import { AMQP_URL } from './broker.js';

const run = promisify(execFile);
const SCRIPT = new URL('../../scripts/rabbitmq.sh', import.meta.url).pathname;
const VERSIONS = ['3.10', '4.0', '4.3'] as const;
export type RabbitVersion = (typeof VERSIONS)[number];

/**
 * The version of a private node: PRIVATE_RABBITMQ_VERSION when set; else that of the broker under test when it is
 * 4.0 or 4.3 (so that a restart or an alarm on a 4.3 run exercises 4.3); else the host's 3.10.
 */
export async function privateVersion(): Promise<RabbitVersion> {
  const wanted = process.env.PRIVATE_RABBITMQ_VERSION;
  if (wanted) {
    if (!(VERSIONS as readonly string[]).includes(wanted)) throw new Error(`PRIVATE_RABBITMQ_VERSION=${wanted}: use ${VERSIONS.join(', ')}`);
    return wanted as RabbitVersion;
  }
  const connection = await amqp.connect(AMQP_URL);
  const served = String(connection.connection.serverProperties.version ?? '');
  await connection.close();
  const minor = served.split('.').slice(0, 2).join('.');
  return minor === '4.0' || minor === '4.3' ? minor : '3.10';
}

async function script(args: string[], timeoutMs: number): Promise<string> {
  try {
    return (await run('bash', [SCRIPT, ...args], { timeout: timeoutMs })).stdout;
  } catch (error) {
    const { stderr } = error as { stderr?: string };
    throw new Error(`scripts/rabbitmq.sh ${args.join(' ')} failed: ${stderr?.trim() || String(error)}`, { cause: error });
  }
}

async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * A RabbitMQ node of the test run's own, for the tests that stop, restart or alarm a broker: its own node name,
 * ports (from 5720) and data directory (scripts/rabbitmq.sh private). `stop()` deletes it; should the test process
 * die first, the script stops it once the process is gone. Start it in `beforeAll`, stop it in `afterAll`.
 */
export class PrivateBroker extends BrokerControl {
  private constructor(
    readonly version: RabbitVersion,
    readonly name: string,
    private readonly port: string,
    /** Its AMQP URL (guest, from 127.0.0.1). */
    readonly url: string,
    command: string,
  ) {
    super(command.split(' '));
  }

  /** Starts a node of `privateVersion()`: a few seconds, plus 1-2 minutes the first time a 4.x chroot is made. */
  static async start(version?: RabbitVersion): Promise<PrivateBroker> {
    const chosen = version ?? (await privateVersion());
    const out = await script(['private', chosen, '--owner-pid', String(process.pid)], 600_000);
    const field = (key: string) => {
      const value = out.match(new RegExp(`^${key}=(.*)$`, 'm'))?.[1];
      if (!value) throw new Error(`scripts/rabbitmq.sh private ${chosen} printed no ${key}: ${out}`);
      return value;
    };
    return new PrivateBroker(chosen, field('NAME'), field('PORT'), field('AMQP_URL'), field('RABBITMQCTL'));
  }

  /** Stops the node and deletes its data. */
  async stop(): Promise<void> {
    await script(['stop', this.version, '--name', this.name, '--port', this.port], 120_000);
  }

  /** `rabbitmqctl stop_app` then `start_app`: every connection is closed, durable queues and messages stay. */
  async restart(): Promise<void> {
    await this.ctl('stop_app');
    await this.ctl('start_app');
  }

  private async alarms(): Promise<string> {
    return (await this.ctl('eval', 'rabbit_alarm:get_alarms().')).trim();
  }

  /**
   * Raises a memory alarm (the broker then blocks every connection that publishes, acks included) and returns the
   * function that restores the previous watermark and waits for the alarm to clear. Call it in a `finally`.
   */
  async raiseMemoryAlarm(): Promise<() => Promise<void>> {
    const previous = (await this.ctl('eval', 'vm_memory_monitor:get_vm_memory_high_watermark().')).trim();
    const restore = async () => {
      const absolute = previous.match(/^\{absolute,\s*(\d+)\}$/);
      await (absolute ? this.ctl('set_vm_memory_high_watermark', 'absolute', absolute[1]) : this.ctl('set_vm_memory_high_watermark', previous));
      await until(async () => (await this.alarms()) === '[]', 'the memory alarm to clear');
    };
    await this.ctl('set_vm_memory_high_watermark', '0.0001');
    try {
      await until(async () => (await this.alarms()).includes('memory'), 'the memory alarm');
    } catch (error) {
      await restore();
      throw error;
    }
    return restore;
  }
}
