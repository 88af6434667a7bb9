// Checks a packed nestjs-amqp-retry tarball as a user's install would see it: the files it ships (both builds, their
// types and maps, the README and LICENSE; no sources, tests or bundled dependencies), every `exports` target present,
// each build marked with the module system it is written in, and every source map resolving to inline sources.
// Usage: node check-package.mjs <tarball>. Prints one line per problem and exits 1 if there is any.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

  for (const required of ['LICENSE', 'README.md', 'package.json', 'dist/cjs/package.json']) {
    if (!files.includes(required)) problems.push(`missing ${required}`);
  }
  const allowed = /^(LICENSE|README\.md|package\.json|dist\/cjs\/package\.json|dist\/(esm|cjs)\/.+\.(js|js\.map|d\.ts))$/;
  for (const file of files) {
    if (!allowed.test(file) || /\.spec\.|\/testing\/|node_modules/.test(file)) problems.push(`ships ${file}, which users do not need`);
  }

  const targets = [];
  const collect = (entry) => (typeof entry === 'string' ? targets.push(entry) : Object.values(entry).forEach(collect));
  collect(manifest.exports);
  for (const target of [...targets, manifest.main, manifest.types]) {
    if (!existsSync(join(root, target))) problems.push(`package.json points to ${target}, which is not in the package`);
  }
  if (JSON.parse(readFileSync(join(root, 'dist/cjs/package.json'), 'utf8')).type !== 'commonjs')
    problems.push('dist/cjs is not marked "type": "commonjs"');
  if (manifest.type !== 'module') problems.push('the package is not "type": "module" (dist/esm relies on it)');
  if (!/exports\.|require\(/.test(readFileSync(join(root, 'dist/cjs/index.js'), 'utf8'))) problems.push('dist/cjs/index.js is not CommonJS');
  if (!/^export /m.test(readFileSync(join(root, 'dist/esm/index.js'), 'utf8'))) problems.push('dist/esm/index.js is not an ES module');

  let maps = 0;
  for (const file of files.filter((f) => f.endsWith('.js'))) {
    const mapFile = `${file}.map`;
    if (!files.includes(mapFile)) {
      problems.push(`${file} has no source map`);
      continue;
    }
    const map = JSON.parse(readFileSync(join(root, mapFile), 'utf8'));
    const inline = Array.isArray(map.sourcesContent) ? map.sourcesContent : [];
    if (map.sources.length === 0 || inline.length !== map.sources.length || inline.some((s) => typeof s !== 'string' || s.length === 0)) {
      problems.push(`${mapFile} does not carry its sources inline`);
    }
    if (!readFileSync(join(root, file), 'utf8').includes(`//# sourceMappingURL=${file.split('/').pop()}.map`))
      problems.push(`${file} does not link its map`);
    maps++;
  }
  for (const problem of problems) console.log(`check-package: ${problem}`);
  console.log(`check-package: ${files.length} files, ${maps} source maps with inline sources, ${problems.length} problems`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(problems.length === 0 ? 0 : 1);
