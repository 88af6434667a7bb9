/**
 * The `nestjs-amqp-retry/health` entry: `RetryHealthIndicator` for `@nestjs/terminus`, an entry of its own so that
 * applications without health checks never load terminus (its injection token cannot be imported lazily).
 *
 * @packageDocumentation
 * @module nestjs-amqp-retry/health
 */
export { RetryHealthIndicator } from './retry.health-indicator.js';
export type { HealthReport } from './health.report.js';
