import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * rabbitmqctl of the broker the tests use: the local one (Debian's /usr/sbin), or the docker compose service's.
 * Set RABBITMQCTL to a command line to override (e.g. "docker exec my-rabbit rabbitmqctl").
 */
function rabbitmqctl(): string[] {
  if (process.env.RABBITMQCTL) return process.env.RABBITMQCTL.split(' ');
  for (const path of ['/usr/sbin/rabbitmqctl', '/usr/lib/rabbitmq/bin/rabbitmqctl', '/usr/local/sbin/rabbitmqctl']) {
    if (existsSync(path)) return [path];
  }
  return ['docker', 'compose', 'exec', '-T', 'rabbitmq', 'rabbitmqctl'];
}

export async function ctl(...args: string[]): Promise<string> {
  const [command, ...prefix] = rabbitmqctl();
  const { stdout } = await run(command, [...prefix, ...args], { timeout: 60_000 });
  return stdout;
}

/** Closes the broker side of every connection whose connection_name starts with `prefix`; returns how many. */
export async function closeConnections(prefix: string): Promise<number> {
  // The table format prints pids as close_connection wants them (<rabbit@host.1.2.3>), JSON does not.
  const lines = (await ctl('list_connections', 'pid', 'client_properties', '-q', '--no-table-headers')).split('\n');
  const pids = lines.filter((line) => line.includes(`{"connection_name","${prefix}`)).map((line) => line.split('\t')[0]);
  for (const pid of pids) await ctl('close_connection', pid, 'closed by a test');
  return pids.length;
}
