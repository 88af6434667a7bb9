// npm run size: the library's size as docs/layout.md counts it. Lines are physical lines (blank and comment lines
// counted) of libs/amqp-retry/src's TypeScript files without specs, fixtures and the page's browser code
// (ops/dashboard/client, built apart); "code" leaves out blank and comment-only lines. Per folder, then the largest files.
//   node scripts/library-size.mjs [how many of the largest files, default 10]
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../libs/amqp-retry/src', import.meta.url));
const skipped = join(root, 'ops', 'dashboard', 'client');
const counted = (name) => name.endsWith('.ts') && !/\.(spec|fixture|d)\.ts$/.test(name);

/** Physical and code lines of one file; a line inside a block comment, or starting one, is a comment line. */
function measure(text) {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop(); // the final newline ends the last line, as wc -l counts
  let code = 0;
  let inBlock = false;
  for (const raw of lines) {
    const line = raw.trim();
    if (inBlock) {
      if (line.includes('*/')) inBlock = false;
      if (!inBlock && line.slice(line.indexOf('*/') + 2).trim()) code++;
      continue;
    }
    if (line === '' || line.startsWith('//')) continue;
    if (line.startsWith('/*')) {
      inBlock = !line.includes('*/');
      if (!inBlock && line.slice(line.indexOf('*/') + 2).trim()) code++;
      continue;
    }
    code++;
  }
  return { lines: lines.length, code };
}

const files = [];
(function walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path !== skipped) walk(path);
    } else if (counted(entry.name)) files.push({ path: relative(root, path), ...measure(readFileSync(path, 'utf8')) });
  }
})(root);

const folders = new Map();
for (const file of files) {
  const parts = file.path.split(sep);
  const folder = parts.length === 1 ? '.' : parts[0] === 'core' && parts.length > 2 ? `core/${parts[1]}` : parts[0];
  const sum = folders.get(folder) ?? { files: 0, lines: 0, code: 0 };
  folders.set(folder, { files: sum.files + 1, lines: sum.lines + file.lines, code: sum.code + file.code });
}
const total = files.reduce((sum, f) => ({ lines: sum.lines + f.lines, code: sum.code + f.code }), { lines: 0, code: 0 });
const row = (name, { files: n, lines, code }) =>
  `${name.padEnd(22)} ${String(n).padStart(5)} ${String(lines).padStart(7)} ${String(code).padStart(7)}`;
console.log(`${'folder'.padEnd(22)} ${'files'.padStart(5)} ${'lines'.padStart(7)} ${'code'.padStart(7)}`);
for (const [name, sum] of [...folders].sort(([a], [b]) => a.localeCompare(b))) console.log(row(name, sum));
console.log(row('library', { files: files.length, ...total }));
const largest = Number(process.argv[2] ?? 10);
console.log(`\nlargest files (lines, code):`);
for (const f of [...files].sort((a, b) => b.lines - a.lines).slice(0, largest))
  console.log(`${String(f.lines).padStart(5)} ${String(f.code).padStart(5)}  ${f.path}`);
