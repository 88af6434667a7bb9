// The variants scenario's table: this library's contenders with options added, each measured on the happy path
// against the same contender with its defaults, in the same round. One row per feature worth watching:
//   - a feature ON shows what it costs when a user turns it on;
//   - the default row of every feature OFF is the contender itself, and the happy path's ratio to raw amqplib
//     (scenario 1) is what shows that a feature off by default costs nothing: a branch that adds one compares that
//     ratio, and `node bench/dist/profile/publish-cost.js` (instructions per publish under callgrind) before and after.
// A new feature adds its row here (and nothing else): the options as a user would write them.
import type { VariantOptions } from '../contenders/contender.js';
import type { ContenderId } from '../contenders/registry.js';

export interface Variant {
  id: string;
  label: string;
  /** The contender it varies; the baseline of its ratios is that contender with its defaults. */
  contender: Extract<ContenderId, 'ours' | 'ours-transport'>;
  options: VariantOptions;
}

export const VARIANTS: Variant[] = [
  {
    id: 'transport-pattern-policy',
    label: 'transport, the pattern with a retry policy of its own',
    contender: 'ours-transport',
    options: { pattern: { delays: ['1s', '5s'], maxAttempts: 3 } },
  },
  {
    id: 'handler-timeout',
    label: 'decorator, a handler timeout of 30 s',
    contender: 'ours',
    options: { handler: { timeout: '30s' } },
  },
  {
    id: 'circuit-breaker',
    label: 'decorator, a circuit breaker (its defaults; it never opens here)',
    contender: 'ours',
    options: { handler: { circuitBreaker: true } },
  },
  {
    id: 'rate-limit',
    label: 'decorator, a rate limit far above the rate (1,000,000 calls a second)',
    contender: 'ours',
    options: { handler: { rateLimit: { calls: 1_000_000, per: '1s' } } },
  },
  {
    id: 'console-heartbeat',
    label: "decorator, the retry console's module (its heartbeat every 5 s, its collector observing each delivery)",
    contender: 'ours',
    options: { console: {} },
  },
  // Not here: partitions (a partitioned handler consumes partition queues behind a hash exchange, not the pre-filled
  // queue this scenario measures: npm run bench:partitions), and the outbox relay (its own scenario, outbox).
];
