import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import { AMQP_URL } from './broker.js';

const run = promisify(execFile);

/** rabbitmqctl of one broker, given as a command line (split on spaces). */
export class BrokerControl {
  constructor(private readonly command: readonly string[]) {}

  async ctl(...args: string[]): Promise<string> {
    const [command, ...prefix] = this.command;
    const { stdout } = await run(command, [...prefix, ...args], { timeout: 60_000 });
    return stdout;
  }

  /** The names of the broker's connections that start with `prefix`. */
  async connectionsNamed(prefix: string): Promise<string[]> {
    const lines = (await this.ctl('list_connections', 'client_properties', '-q', '--no-table-headers')).split('\n');
    return lines.flatMap((line) => line.match(/\{"connection_name","([^"]*)"\}/)?.[1] ?? []).filter((name) => name.startsWith(prefix));
  }

  /** Closes the broker side of every connection whose connection_name starts with `prefix`; returns how many. */
  async closeConnections(prefix: string): Promise<number> {
    // The table format prints pids as close_connection wants them (<rabbit@host.1.2.3>), JSON does not.
    const lines = (await this.ctl('list_connections', 'pid', 'client_properties', '-q', '--no-table-headers')).split('\n');
    const pids = lines.filter((line) => line.includes(`{"connection_name","${prefix}`)).map((line) => line.split('\t')[0]);
    for (const pid of pids) await this.ctl('close_connection', pid, 'closed by a test');
    return pids.length;
  }
}

/**
 * Commands that stop, restart, reset or alarm a broker. The broker under test may be shared (another team's, or
 * this machine's 5672 node that other runs use at the same time): such commands go to a node of the test run's own
 * (`PrivateBroker`), never to it.
 */
const DISRUPTIVE = new Set([
  'stop',
  'shutdown',
  'stop_app',
  'start_app',
  'reset',
  'force_reset',
  'force_boot',
  'join_cluster',
  'forget_cluster_node',
  'close_all_connections',
  'set_vm_memory_high_watermark',
  'set_disk_free_limit',
]);

const isLocalDefault = (url: string) => {
  const { protocol, hostname, port } = new URL(url);
  return protocol === 'amqp:' && ['localhost', '127.0.0.1', '[::1]'].includes(hostname) && (port === '' || port === '5672');
};

/**
 * The command line of the broker under test's rabbitmqctl: RABBITMQCTL (e.g. "docker exec my-rabbit rabbitmqctl", or
 * what `scripts/rabbitmq.sh env 4.3` prints). Without it, only the default local broker has a known rabbitmqctl
 * (Debian's, or the docker compose service's): for any other AMQP_URL the tests would reach the wrong broker.
 */
function testBrokerCommand(): string[] {
  if (process.env.RABBITMQCTL) return process.env.RABBITMQCTL.trim().split(/\s+/);
  if (!isLocalDefault(AMQP_URL)) {
    throw new Error(
      `AMQP_URL names another broker than the local 5672 one, and RABBITMQCTL is not set: set RABBITMQCTL to the rabbitmqctl command line of that broker (for the nodes of scripts/rabbitmq.sh, "scripts/rabbitmq.sh env <version>" prints both)`,
    );
  }
  for (const path of ['/usr/sbin/rabbitmqctl', '/usr/lib/rabbitmq/bin/rabbitmqctl', '/usr/local/sbin/rabbitmqctl']) {
    if (existsSync(path)) return [path];
  }
  return ['docker', 'compose', 'exec', '-T', 'rabbitmq', 'rabbitmqctl'];
}

/** The broker under test's rabbitmqctl: refuses the commands that would disturb it. */
class TestBrokerControl extends BrokerControl {
  private checked?: Promise<void>;

  override async ctl(...args: string[]): Promise<string> {
    const command = args.find((arg) => DISRUPTIVE.has(arg));
    if (command) {
      throw new Error(`"rabbitmqctl ${command}" would disturb the broker under test, which others may use: do it on a PrivateBroker`);
    }
    this.checked ??= this.checkSameBroker().catch((error: unknown) => {
      this.checked = undefined;
      throw error;
    });
    await this.checked;
    return super.ctl(...args);
  }

  /** Checks once that RABBITMQCTL and AMQP_URL name the same broker, so that no command lands on another one. */
  private async checkSameBroker(): Promise<void> {
    const connection = await amqp.connect(AMQP_URL);
    const served = String(connection.connection.serverProperties.cluster_name ?? '');
    await connection.close();
    const named = (await super.ctl('-q', 'eval', 'rabbit_nodes:cluster_name().')).trim().replace(/^<<"(.*)">>$/, '$1');
    if (served !== named) {
      throw new Error(`RABBITMQCTL reaches the broker "${named}" but AMQP_URL reaches "${served}": point both at the same broker`);
    }
  }
}

let testBroker: TestBrokerControl | undefined;
const control = () => (testBroker ??= new TestBrokerControl(testBrokerCommand()));

/** rabbitmqctl of the broker under test (AMQP_URL, RABBITMQCTL); refuses what would stop, restart or alarm it. */
export const ctl = async (...args: string[]) => control().ctl(...args);

/** The names of the test broker's connections that start with `prefix`. */
export const connectionsNamed = async (prefix: string) => control().connectionsNamed(prefix);

/** Closes the test broker's side of every connection whose connection_name starts with `prefix`; returns how many. */
export const closeConnections = async (prefix: string) => control().closeConnections(prefix);
