import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's chromium, installed by scripts/ensure-browser.sh (npx playwright install cannot download here). */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * A headless Chromium with a fresh profile of its own; `close()` ends it and deletes the profile. `httpCredentials`:
 * what a person would type when the browser asks for HTTP Basic credentials.
 */
export async function launchBrowser(
  options: { httpCredentials?: { username: string; password: string } } = {},
): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`No Chromium at ${CHROMIUM_PATH}: run bash scripts/ensure-browser.sh (apt-get install chromium), or set CHROMIUM_PATH`);
  }
  const profile = await mkdtemp(join(tmpdir(), 'retry-dashboard-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
    ...options,
  });
  return {
    context,
    close: async () => {
      await context.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true });
    },
  };
}
