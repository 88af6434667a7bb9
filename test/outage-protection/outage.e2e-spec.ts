// The outage: 5,000 messages at 100/s to a handler whose dependency fails every call for 60 s in the middle
// of the run, delays 1s, 5s, 10s and 4 attempts; one queue without a circuit breaker, one with. The figures of
// README "Outage protection" are those of that full run: OUTAGE_FULL=1. By default (CI, `npm test`) the test runs the
// small one, 1,500 messages and a 20 s outage from 3 s (bench/scenarios/outage.sizes.ts), which still outlasts the
// tiers (16 s) so that the queue without a breaker parks; OUTAGE_N, OUTAGE_RATE, OUTAGE_SECONDS and
// OUTAGE_START_SECONDS override either size.
import { describeOutage, outageQueues, outageSettings, runOutage } from '../../bench/scenarios/outage.driver.js';
import { outageTestEnv } from '../../bench/scenarios/outage.sizes.js';
import { AMQP_URL } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

const settings = outageSettings(outageTestEnv(process.env), AMQP_URL);
const runMs = (settings.messages / settings.ratePerSecond) * 1_000 + settings.outageStartMs + settings.outageMs;

describe('outage protection: a dependency down in the middle of a run', () => {
  const suite = useSuite('e2e.outage');

  it(
    'with the breaker: no good message parked, none lost, few handler calls during the outage, all handled soon after',
    async () => {
      const names = outageQueues('e2e.outage');
      suite.retryQueue(names.without);
      suite.retryQueue(names.with);
      const figures = await runOutage(settings, names, (line) => process.stdout.write(`${line}\n`));
      process.stdout.write(`${describeOutage(figures.without)}\n${describeOutage(figures.with)}\n`);

      // Without the breaker the outage outlasts every message's tiers: good messages are parked, none lost.
      expect(figures.without.parked).toBeGreaterThan(0);
      expect(figures.without.lost).toBe(0);

      const breaker = figures.with;
      expect(breaker.parked).toBe(0);
      expect(breaker.lost).toBe(0);
      expect(breaker.handled).toBe(settings.messages);
      expect(breaker.callsDuringOutage).toBeLessThan(0.03 * settings.messages); // README: under 3% of the messages
      expect(breaker.lastHandledAfterRecoveryMs).toBeLessThanOrEqual(settings.settleWithinMs);
      expect(breaker.transitions).toBeGreaterThanOrEqual(3); // open, half-open, ..., running again
      expect(await suite.broker.count(breaker.queue)).toBe(0);
    },
    runMs + settings.settleWithinMs + 120_000,
  );
});
