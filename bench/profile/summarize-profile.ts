// Summarizes a .cpuprofile written by BENCH_CPU_PROF: where the measured window's CPU time went, by package and
// by function, and the inclusive time of this library's functions (their own work plus what they call).
// Usage: node bench/dist/profile/summarize-profile.js bench/dist/profiles/<queue>.cpuprofile [top]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
}

/** Not CPU work of the process: V8's own pseudo-frames for waiting. */
const NOT_WORK = new Set(['(idle)', '(root)']);

/** The npm package (or "node internals", "nestjs-amqp-retry", ...) a frame belongs to. */
export function packageOf(url: string, functionName: string): string {
  if (url === '') return functionName; // (garbage collector), (program)
  if (url.startsWith('node:')) return 'node internals';
  if (url.includes('/libs/amqp-retry/')) return 'nestjs-amqp-retry';
  const inModules = url.lastIndexOf('/node_modules/');
  if (inModules >= 0) {
    const [first, second] = url.slice(inModules + '/node_modules/'.length).split('/');
    return first.startsWith('@') ? `${first}/${second}` : first;
  }
  if (url.includes('/bench/')) return 'bench harness';
  return url;
}

const where = (n: ProfileNode) => `${n.callFrame.url.replace(/^.*\/(libs|node_modules|bench)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
const keyOf = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'} ${where(n)}`;
const percent = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1).padStart(5)}%`;

function summarize(profile: Profile, top: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const hits = new Map<number, number>();
  for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  const work = (n: ProfileNode) => (NOT_WORK.has(n.callFrame.functionName) ? 0 : (hits.get(n.id) ?? 0));
  const total = profile.nodes.reduce((sum, n) => sum + work(n), 0);
  const usPerSample = (profile.endTime - profile.startTime) / Math.max(1, profile.samples.length);

  const selfByPackage = new Map<string, number>();
  const selfByFunction = new Map<string, { samples: number; pkg: string }>();
  for (const n of profile.nodes) {
    const own = work(n);
    if (own === 0) continue;
    const pkg = packageOf(n.callFrame.url, n.callFrame.functionName);
    selfByPackage.set(pkg, (selfByPackage.get(pkg) ?? 0) + own);
    const entry = selfByFunction.get(keyOf(n)) ?? { samples: 0, pkg };
    selfByFunction.set(keyOf(n), { samples: entry.samples + own, pkg });
  }

  // Inclusive time of our functions: a subtree counts once per function, even when the function recurses.
  const inclusive = new Map<string, number>();
  const walk = (n: ProfileNode, onStack: Set<string>): number => {
    const key = keyOf(n);
    const ours = packageOf(n.callFrame.url, n.callFrame.functionName) === 'nestjs-amqp-retry' && !onStack.has(key);
    if (ours) onStack.add(key);
    const subtree = work(n) + (n.children ?? []).reduce((sum, id) => sum + walk(byId.get(id) as ProfileNode, onStack), 0);
    if (ours) {
      onStack.delete(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + subtree);
    }
    return subtree;
  };
  walk(profile.nodes[0], new Set());

  const sortedDesc = <T>(entries: Iterable<[string, T]>, value: (t: T) => number) => [...entries].sort((a, b) => value(b[1]) - value(a[1]));
  return [
    `${profile.samples.length} samples, ${((total * usPerSample) / 1000).toFixed(0)} ms of CPU work in the window (idle excluded)`,
    '',
    'Self time by package:',
    ...sortedDesc(selfByPackage, (v) => v).map(([pkg, s]) => `  ${percent(s, total)}  ${pkg}`),
    '',
    `Top ${top} functions by self time:`,
    ...sortedDesc(selfByFunction, (v) => v.samples)
      .slice(0, top)
      .map(([key, v]) => `  ${percent(v.samples, total)}  ${key}  [${v.pkg}]`),
    '',
    "This library's functions by inclusive time (their own work and everything they call):",
    ...sortedDesc(inclusive, (v) => v)
      .slice(0, top)
      .map(([key, s]) => `  ${percent(s, total)}  ${key}`),
  ].join('\n');
}

const [file, top = '20'] = process.argv.slice(2);
if (!file) {
  console.error('Usage: node bench/dist/profile/summarize-profile.js <file.cpuprofile> [top]');
  process.exit(2);
}
console.log(summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(top)));
