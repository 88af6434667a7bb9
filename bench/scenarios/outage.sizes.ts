// The outage scenario's two sizes, as the environment variables outageSettings() reads (docs/outage-protection.md).
// FULL: the full run, whose figures README "Outage protection" states (5,000 messages at 100/s, a 60 s outage).
// SMALL: 1,500 messages and a 20 s outage from 3 s, which still outlasts the tiers (16 s): the e2e test's default
// (so that `npm test` stays fast; OUTAGE_FULL=1 runs the full one).
// SMOKE: BENCH_QUICK's, which only shows that the scenario still runs (the e2e test checks the figures): 300 messages
// and a 6 s outage.

export const FULL_OUTAGE = { OUTAGE_N: '5000', OUTAGE_SECONDS: '60' } as const;
export const SMALL_OUTAGE = { OUTAGE_N: '1500', OUTAGE_SECONDS: '20', OUTAGE_START_SECONDS: '3' } as const;
export const SMOKE_OUTAGE = { OUTAGE_N: '300', OUTAGE_SECONDS: '6', OUTAGE_START_SECONDS: '1' } as const;

/** The e2e test's environment: the small run unless OUTAGE_FULL=1; OUTAGE_* variables set override either. */
export function outageTestEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return { ...(env.OUTAGE_FULL === '1' ? FULL_OUTAGE : SMALL_OUTAGE), ...env };
}
