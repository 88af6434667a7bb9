import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const LIB = resolve('libs/amqp-retry');
const LAUNCHER = join(LIB, 'bin', 'amqp-retry.js');

/**
 * The launcher copied into a package folder of its own (`<root>/libs/amqp-retry`, as in this repository), with the
 * files the case needs: paths under `package/` are the package's, under `root/` the repository's.
 */
function packageDir(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'amqp-retry-bin-'));
  const dir = join(root, 'libs', 'amqp-retry');
  mkdirSync(join(dir, 'bin'), { recursive: true });
  copyFileSync(LAUNCHER, join(dir, 'bin', 'amqp-retry.js'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  for (const [path, text] of Object.entries(files)) {
    const target = path.startsWith('root/') ? join(root, path.slice('root/'.length)) : join(dir, path.slice('package/'.length));
    mkdirSync(join(target, '..'), { recursive: true });
    writeFileSync(target, text);
  }
  return dir;
}
const removeAll = (dir: string) => rmSync(join(dir, '..', '..'), { recursive: true, force: true });
const run = (dir: string, ...args: string[]) => spawnSync(process.execPath, [join(dir, 'bin', 'amqp-retry.js'), ...args], { encoding: 'utf8' });
const FAKE_CLI = "console.log('cli ran with ' + process.argv.slice(2).join(' '));";

describe('the amqp-retry bin', () => {
  it('is a committed file that the workspace links into node_modules/.bin, so npx finds it without the registry', () => {
    const pkg = JSON.parse(readFileSync(join(LIB, 'package.json'), 'utf8')) as { bin: Record<string, string>; files: string[] };
    expect(pkg.bin).toEqual({ 'amqp-retry': 'bin/amqp-retry.js' });
    expect(pkg.files).toContain('bin/amqp-retry.js');
    // npm ci linked it although dist/ need not exist: the link resolves to the launcher, not to the registry.
    expect(realpathSync('node_modules/.bin/amqp-retry')).toBe(realpathSync(LAUNCHER));
  });

  it('runs the compiled CLI with the arguments given', () => {
    const dir = packageDir({ 'package/dist/esm/ops/cli/main.js': FAKE_CLI });
    try {
      const result = run(dir, 'parked', 'list', '--json');
      expect([result.status, result.stdout.trim(), result.stderr]).toEqual([0, 'cli ran with parked list --json', '']);
    } finally {
      removeAll(dir);
    }
  });

  it('in a checkout without dist/, builds first (on stderr: stdout stays the command output) and then runs', () => {
    const build = `import { mkdirSync, writeFileSync } from 'node:fs';
console.log('built');
mkdirSync(new URL('../libs/amqp-retry/dist/esm/ops/cli/', import.meta.url), { recursive: true });
writeFileSync(new URL('../libs/amqp-retry/dist/esm/ops/cli/main.js', import.meta.url), ${JSON.stringify(FAKE_CLI)});`;
    const dir = packageDir({ 'root/scripts/build-lib.mjs': build });
    try {
      const first = run(dir, '--help');
      expect(first.status).toBe(0);
      expect(first.stdout.trim()).toBe('cli ran with --help');
      expect(first.stderr).toContain('the library is not built yet (no dist/): building it first');
      expect(first.stderr).toContain('built');
      const second = run(dir, '--help');
      expect([second.status, second.stderr]).toEqual([0, '']);
    } finally {
      removeAll(dir);
    }
  });

  it('says what to do, and exits 1, when neither the build nor a way to make it is there', () => {
    const dir = packageDir({});
    try {
      const result = run(dir, '--help');
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/dist\/esm\/ops\/cli\/main\.js is missing: reinstall nestjs-amqp-retry/);
    } finally {
      removeAll(dir);
    }
  });

  it('says what to do, and exits 1, when the build fails', () => {
    const dir = packageDir({ 'root/scripts/build-lib.mjs': 'process.exit(3);' });
    try {
      const result = run(dir, '--help');
      expect(result.status).toBe(1);
      expect(result.stderr).toContain('the build failed (see above); fix it, or run: npm run build -w nestjs-amqp-retry');
    } finally {
      removeAll(dir);
    }
  });
});
