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

/** The names of the broker's connections that start with `prefix`. */
export async function connectionsNamed(prefix: string): Promise<string[]> {
  const lines = (await ctl('list_connections', 'client_properties', '-q', '--no-table-headers')).split('\n');
  return lines.flatMap((line) => line.match(/\{"connection_name","([^"]*)"\}/)?.[1] ?? []).filter((name) => name.startsWith(prefix));
}

/** Closes the broker side of every connection whose connection_name starts with `prefix`; returns how many. */
export async function closeConnections(prefix: string): Promise<number> {
  // The table format prints pids as close_connection wants them (<rabbit@host.1.2.3>), JSON does not.
  const lines = (await ctl('list_connections', 'pid', 'client_properties', '-q', '--no-table-headers')).split('\n');
  const pids = lines.filter((line) => line.includes(`{"connection_name","${prefix}`)).map((line) => line.split('\t')[0]);
  for (const pid of pids) await ctl('close_connection', pid, 'closed by a test');
  return pids.length;
}

/** A predicate over the broker's active alarms (`rabbit_alarm:get_alarms()`). */
async function alarms(): Promise<string> {
  return (await ctl('eval', 'rabbit_alarm:get_alarms().')).trim();
}

async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Raises a memory alarm (the broker then blocks every connection that publishes, acks included) and returns the
 * function that restores the previous watermark and waits for the alarm to clear. Call it in a `finally`.
 */
export async function raiseMemoryAlarm(): Promise<() => Promise<void>> {
  const previous = (await ctl('eval', 'vm_memory_monitor:get_vm_memory_high_watermark().')).trim();
  const restore = async () => {
    const absolute = previous.match(/^\{absolute,\s*(\d+)\}$/);
    await (absolute ? ctl('set_vm_memory_high_watermark', 'absolute', absolute[1]) : ctl('set_vm_memory_high_watermark', previous));
    await until(async () => (await alarms()) === '[]', 'the memory alarm to clear');
  };
  await ctl('set_vm_memory_high_watermark', '0.0001');
  try {
    await until(async () => (await alarms()).includes('memory'), 'the memory alarm');
  } catch (error) {
    await restore();
    throw error;
  }
  return restore;
}
