import { spawnSync } from 'node:child_process';
import { DASHBOARD_SCRIPT } from './dashboard.client.generated.js';

describe('the generated page script and stylesheet', () => {
  it('is what client/*.ts and client/app.css build to now (run npm run build:client -w nestjs-amqp-retry after changing them)', () => {
    const check = spawnSync(process.execPath, ['scripts/build-client.mjs', '--check'], { encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
  }, 30_000);

  it('type-checks for the browser (client/tsconfig.json: DOM, strict)', () => {
    const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'libs/amqp-retry/src/ops/dashboard/client/tsconfig.json'], {
      encoding: 'utf8',
    });
    expect(tsc.stdout).toBe('');
    expect(tsc.status).toBe(0);
  }, 60_000);

  it('is one self-contained script for the browser: no import, no require, no source map comment', () => {
    expect(DASHBOARD_SCRIPT).toMatch(/^"use strict";\n\(\(\) => \{/);
    expect(DASHBOARD_SCRIPT).not.toMatch(/^\s*import\s|\brequire\(|sourceMappingURL/m);
  });
});
