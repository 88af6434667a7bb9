#!/usr/bin/env node
// The `amqp-retry` bin: a committed launcher for the compiled CLI (dist/esm/ops/cli/main.js). npm links a workspace's
// bin at `npm ci` only when its file exists then, and dist/ does not exist before a build: with the compiled file as
// the bin, `npx amqp-retry` in this repository found nothing local and asked the public registry for a package of
// that name (a 404 today, someone else's code should anyone publish one). This file always exists, so the link is
// made; in a checkout without dist/ it builds the library first (on stderr, so that --json output stays clean).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/esm/ops/cli/main.js', import.meta.url);
// In this repository (libs/amqp-retry/bin/): the repository's build script. Not in the package, which has dist/.
const build = new URL('../../../scripts/build-lib.mjs', import.meta.url);

if (!existsSync(fileURLToPath(main))) {
  if (!existsSync(fileURLToPath(build))) {
    process.stderr.write(`amqp-retry: ${fileURLToPath(main)} is missing: reinstall nestjs-amqp-retry (npm install)\n`);
    process.exit(1);
  }
  process.stderr.write('amqp-retry: the library is not built yet (no dist/): building it first (npm run build -w nestjs-amqp-retry)\n');
  try {
    execFileSync(process.execPath, [fileURLToPath(build)], { stdio: ['ignore', 2, 2] });
  } catch {
    process.stderr.write('amqp-retry: the build failed (see above); fix it, or run: npm run build -w nestjs-amqp-retry\n');
    process.exit(1);
  }
}
await import(main.href);
