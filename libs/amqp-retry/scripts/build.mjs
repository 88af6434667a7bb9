// Builds the package twice from one source: dist/esm (ES modules, for `import`) and dist/cjs (CommonJS, for
// `require`); package.json's `exports` sends each kind of app to one of them, so an app loads one copy of the
// library and of Nest. dist/cjs/package.json marks that folder CommonJS for Node and for TypeScript (its .d.ts
// files then describe CommonJS modules: a CommonJS app with "module": "node16" typechecks against them).
// Source maps carry their sources inline, so they resolve without shipping src/.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const libDir = join(import.meta.dirname, '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const run = (project) => execFileSync(process.execPath, [tsc, '-p', join(libDir, project)], { stdio: 'inherit' });

rmSync(join(libDir, 'dist'), { recursive: true, force: true });
run('tsconfig.lib.json');
run('tsconfig.cjs.json');
writeFileSync(join(libDir, 'dist', 'cjs', 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
console.log('built dist/esm and dist/cjs');
