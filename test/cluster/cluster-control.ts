import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = new URL('../../scripts/cluster.sh', import.meta.url).pathname;

/** The nodes of scripts/cluster.sh and their AMQP URLs (CLUSTER_PORT_BASE as in the script). */
export const NODES = ['c1', 'c2', 'c3'] as const;
export type Node = (typeof NODES)[number];
const portBase = Number(process.env.CLUSTER_PORT_BASE ?? 5680);
export const nodeUrl = (node: Node) => `amqp://guest:guest@127.0.0.1:${portBase + NODES.indexOf(node) + 1}`;
export const CLUSTER_URLS = NODES.map(nodeUrl);

async function cluster(...args: string[]): Promise<string> {
  const { stdout } = await run('bash', [SCRIPT, ...args], { timeout: 120_000 });
  return stdout.trim();
}

/** The node leading a quorum queue, e.g. 'c2'. */
export async function leaderOf(queue: string): Promise<Node> {
  const leader = (await cluster('leader', queue)).replace(/@localhost$/, '');
  if (!(NODES as readonly string[]).includes(leader)) throw new Error(`no leader for ${queue}: "${leader}"`);
  return leader as Node;
}

/** SIGKILLs a node; resolves once its process is gone. */
export const killNode = (node: Node) => cluster('kill', node);
/** Starts a killed node again, with its data; resolves once it runs. */
export const startNode = (node: Node) => cluster('start', node);
/** Nodes that run now. */
export async function runningNodes(): Promise<Node[]> {
  const status = await cluster('status');
  return NODES.filter((node) => status.includes(`${node}@localhost running`));
}
