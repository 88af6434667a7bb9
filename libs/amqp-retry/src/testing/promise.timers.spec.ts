import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type * as TimersPromises from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { VirtualClock } from './virtual.clock.js';

/** `node:timers/promises` as CommonJS code reads it: the module object, looked up at each call. */
const timers = createRequire(import.meta.url)('node:timers/promises') as typeof TimersPromises;
const real = { setTimeout: timers.setTimeout, setInterval: timers.setInterval, wait: timers.scheduler.wait, timeout: AbortSignal.timeout };

/** Runs `body` as code of `clock`'s with the clock installed, and uninstalls it whatever happens. */
async function installed<T>(clock: VirtualClock, body: () => Promise<T>): Promise<T> {
  clock.install();
  try {
    return await clock.within(body);
  } finally {
    clock.uninstall();
  }
}

describe('the virtual clock and node:timers/promises, read through its module object', () => {
  it('setTimeout resolves with its value when the clock reaches its delay, not before', async () => {
    const clock = new VirtualClock(0);
    const woke: unknown[] = [];
    await installed(clock, async () => {
      void timers.setTimeout(4_000, 'slept').then((value) => woke.push([clock.elapsed, value]));
      await clock.runUntil(3_999);
      expect(woke).toEqual([]);
      await clock.runUntil(4_000);
    });
    expect(woke).toEqual([[4_000, 'slept']]);
  });

  it('an aborted signal rejects it with an AbortError and cancels its timer; ref: false leaves it unreferenced', async () => {
    const clock = new VirtualClock(0);
    await installed(clock, async () => {
      const controller = new AbortController();
      const slept = timers.setTimeout(1_000, undefined, { signal: controller.signal });
      controller.abort(new Error('stop'));
      await expect(slept).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: new Error('stop') });
      expect(clock.pending()).toBe(0);
      await expect(timers.setTimeout(1, undefined, { signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
      void timers.setTimeout(1_000, undefined, { ref: false });
      expect(clock.next()?.hasRef()).toBe(false);
      clock.clear();
    });
  });

  it('setInterval yields at each period; scheduler.wait and setImmediate wait too', async () => {
    const clock = new VirtualClock(0);
    const seen: number[] = [];
    await installed(clock, async () => {
      const ticking = (async () => {
        for await (const _ of timers.setInterval(1_000)) if (seen.push(clock.elapsed) === 3) break;
      })();
      await clock.runUntil(3_500);
      await ticking;
      expect(clock.pending()).toBe(0);
      const waited = timers.scheduler.wait(500).then(() => seen.push(clock.elapsed));
      await clock.runUntil(4_000);
      await waited;
      expect(await timers.setImmediate('now')).toBe('now');
    });
    expect(seen).toEqual([1_000, 2_000, 3_000, 4_000]);
  });

  it('AbortSignal.timeout aborts with a TimeoutError when the clock reaches its delay', async () => {
    const clock = new VirtualClock(0);
    await installed(clock, async () => {
      const signal = AbortSignal.timeout(3_000);
      await clock.runUntil(2_999);
      expect(signal.aborted).toBe(false);
      await clock.runUntil(3_000);
      expect(signal.aborted).toBe(true);
      expect(signal.reason).toMatchObject({ name: 'TimeoutError' });
    });
  });

  it('uninstall() puts back what it replaced', async () => {
    const clock = new VirtualClock(0);
    await installed(clock, async () => {
      expect([timers.setTimeout, timers.setInterval, timers.scheduler.wait, AbortSignal.timeout]).not.toContain(real.setTimeout);
    });
    expect({ setTimeout: timers.setTimeout, setInterval: timers.setInterval, wait: timers.scheduler.wait, timeout: AbortSignal.timeout }).toEqual(
      real,
    );
    expect(Object.keys(timers.scheduler)).toEqual([]);
  });
});

/**
 * An ES module run by Node itself (Jest's module registry copies a builtin's named exports once, see the guide): its
 * named imports of `node:timers/promises`, bound before the clock is installed, follow the clock and come back.
 */
const ESM_SCRIPT = `
import { setTimeout as sleep, scheduler } from 'node:timers/promises';
import { VirtualClock } from './virtual.clock.js';
const before = sleep;
const clock = new VirtualClock(0);
clock.install();
const woke = [];
clock.within(() => {
  sleep(4000, 'slept').then((value) => woke.push([clock.elapsed, value]));
  scheduler.wait(1000).then(() => woke.push([clock.elapsed, 'waited']));
});
await clock.runUntil(3999);
const early = woke.length;
await clock.runUntil(4000);
const replaced = sleep !== before;
clock.uninstall();
console.log(JSON.stringify({ early, woke, replaced, restored: sleep === before }));
`;

describe('the virtual clock and named imports of node:timers/promises in an ES module', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'virtual-clock-esm-'));
    const here = dirname(fileURLToPath(import.meta.url));
    for (const name of ['virtual.clock', 'promise.timers']) {
      const source = await readFile(join(here, `${name}.ts`), 'utf8');
      const options = { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022, esModuleInterop: true };
      await writeFile(join(dir, `${name}.js`), ts.transpileModule(source, { compilerOptions: options }).outputText);
    }
    await writeFile(join(dir, 'package.json'), '{ "type": "module" }');
    await writeFile(join(dir, 'script.js'), ESM_SCRIPT);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('see the clock while it is installed (their live bindings), and the real timers once it is uninstalled', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [join(dir, 'script.js')]);
    expect(JSON.parse(stdout)).toEqual({
      early: 1,
      woke: [
        [1_000, 'waited'],
        [4_000, 'slept'],
      ],
      replaced: true,
      restored: true,
    });
  });
});
