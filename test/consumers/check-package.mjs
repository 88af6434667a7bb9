// Checks a packed nestjs-amqp-retry tarball as a user's install would see it: the files it ships (both builds and
// their types, the bin's launcher, the README and LICENSE; no sources, source maps, tests or bundled dependencies),
// every `exports` and `bin` target present, each build marked with the module system it is written in, the metadata a
// registry page shows (repository, homepage, bugs, keywords, license), and its unpacked size. No source maps: they
// were more than half of the package (libs/amqp-retry/README.md, "What the package ships").
// Usage: node check-package.mjs <tarball>. Prints one line per problem and exits 1 if there is any.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const tarball = process.argv[2];
if (!tarball) throw new Error('usage: node check-package.mjs <tarball>');
const dir = mkdtempSync(join(tmpdir(), 'nestjs-amqp-retry-package-'));
const problems = [];
try {
  execFileSync('tar', ['-xzf', tarball, '-C', dir]);
  const root = join(dir, 'package');
  const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((f) => f.replace(/^package\//, ''));
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

  for (const required of [
    'LICENSE',
    'README.md',
    'package.json',
    'dist/cjs/package.json',
    'migrations/001_outbox_inbox.sql',
    'migrations/002_inbox_queue_handled_at.sql',
  ]) {
    if (!files.includes(required)) problems.push(`missing ${required}`);
  }
  // migrations/: the outbox's SQL, for users who run their migrations themselves (docs/outbox.md).
  const allowed =
    /^(LICENSE|README\.md|package\.json|bin\/amqp-retry\.js|dist\/cjs\/package\.json|dist\/(esm|cjs)\/.+\.(js|d\.ts)|migrations\/[^/]+\.sql)$/;
  for (const file of files) {
    if (!allowed.test(file) || /\.spec\.|\.fixture\.|node_modules/.test(file)) problems.push(`ships ${file}, which users do not need`);
  }

  const targets = [];
  const collect = (entry) => (typeof entry === 'string' ? targets.push(entry) : Object.values(entry).forEach(collect));
  collect(manifest.exports);
  for (const target of [...targets, manifest.main, manifest.types, ...Object.values(manifest.bin ?? {})]) {
    if (!existsSync(join(root, target))) problems.push(`package.json points to ${target}, which is not in the package`);
  }
  if (JSON.parse(readFileSync(join(root, 'dist/cjs/package.json'), 'utf8')).type !== 'commonjs')
    problems.push('dist/cjs is not marked "type": "commonjs"');
  if (manifest.type !== 'module') problems.push('the package is not "type": "module" (dist/esm relies on it)');
  if (!/exports\.|require\(/.test(readFileSync(join(root, 'dist/cjs/index.js'), 'utf8'))) problems.push('dist/cjs/index.js is not CommonJS');
  if (!/^export /m.test(readFileSync(join(root, 'dist/esm/index.js'), 'utf8'))) problems.push('dist/esm/index.js is not an ES module');

  for (const file of files.filter((f) => f.endsWith('.js'))) {
    if (readFileSync(join(root, file), 'utf8').includes('//# sourceMappingURL=')) problems.push(`${file} links a source map that is not shipped`);
  }
  // What a user reads on the registry's page, and where they report a problem.
  if (typeof manifest.repository?.url !== 'string' || !manifest.repository.url.includes('github.com'))
    problems.push('package.json has no repository url');
  for (const field of ['homepage', 'license'])
    if (typeof manifest[field] !== 'string' || manifest[field] === '') problems.push(`package.json has no ${field}`);
  if (typeof manifest.bugs?.url !== 'string') problems.push('package.json has no bugs url');
  if (!Array.isArray(manifest.keywords) || !['nestjs', 'rabbitmq', 'retry'].every((k) => manifest.keywords.includes(k)))
    problems.push('package.json keywords lack nestjs, rabbitmq or retry');
  // Two builds with their types: about 3.7 MB unpacked. A budget, so that a change that doubles it (maps back,
  // a bundled dependency) is seen, with room for the library's own growth.
  const unpacked = files.reduce((sum, file) => sum + statSync(join(root, file)).size, 0); // as npm counts it
  if (unpacked > 4_500_000) problems.push(`unpacks to ${unpacked} bytes, over the 4.5 MB budget`);
  for (const problem of problems) console.log(`check-package: ${problem}`);
  console.log(`check-package: ${files.length} files, ${(unpacked / 1e6).toFixed(2)} MB unpacked, ${problems.length} problems`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(problems.length === 0 ? 0 : 1);
