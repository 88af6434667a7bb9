// npm run package:check: the package as it would be published, checked by the tools made for it.
//   1. npm pack (its prepack builds dist/esm and dist/cjs) into a temporary folder: the tarball users would install;
//   2. publint on that tarball: package.json's exports, main, types, bin and files against what the tarball holds;
//   3. @arethetypeswrong/cli on it: each entry (`.`, `./transport`, `./health`, `./testing`) resolves to types of the right module
//      kind under node10, node16 from CommonJS, node16 from ESM and bundler resolution;
//   4. npm publish --dry-run: fails on any warning of npm's about the package.json (one it would correct on publish),
//      but the one that says a dry run is not logged in.
// Exits non-zero, naming the step, when one fails. About 30 seconds (the build is most of it).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const workspace = 'nestjs-amqp-retry';
const bin = (name) => join(root, 'node_modules', '.bin', name);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const dir = mkdtempSync(join(tmpdir(), 'amqp-retry-pack-'));
const failures = [];

const step = (name, command, args, check = () => undefined) => {
  console.log(`\n== ${name}`);
  const result = spawnSync(command, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  const problem = result.status !== 0 ? `exited with ${result.status ?? result.signal}` : check(result);
  if (problem) failures.push(`${name}: ${problem}`);
};

try {
  // npm pack prints the prepack's output and then the tarball's name: the name is read from the folder instead.
  execFileSync(npm, ['pack', '-w', workspace, '--pack-destination', dir, '--loglevel=warn'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  const [file] = readdirSync(dir).filter((name) => name.endsWith('.tgz'));
  const tarball = join(dir, file);
  console.log(`packed ${file}: ${(statSync(tarball).size / 1e3).toFixed(1)} kB`);

  step('publint', bin('publint'), ['run', tarball, '--strict']);
  step('@arethetypeswrong/cli', bin('attw'), [tarball, '--format', 'table-flipped', '--no-emoji', '--no-color']);
  // The build is in place (the pack's prepack made it): --ignore-scripts spares a second one.
  step('npm publish --dry-run', npm, ['publish', '--dry-run', '--ignore-scripts', '--loglevel=warn', '-w', workspace], (result) => {
    const warnings = result.stderr.split('\n').filter((line) => /^npm warn/i.test(line) && !/requires you to be logged in/.test(line));
    return warnings.length > 0 ? `npm warned: ${warnings.join(' / ')}` : undefined;
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}

if (failures.length > 0) {
  console.error(`\npackage:check failed:\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
console.log('\npackage:check: publint, @arethetypeswrong/cli and npm publish --dry-run found nothing');
