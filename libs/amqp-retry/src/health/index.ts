/**
 * The `nestjs-amqp-retry/health` entry: `RetryHealthIndicator` for `@nestjs/terminus`. It is the only entry that
 * imports terminus, so that applications without health checks never load it (the indicator needs terminus's
 * HealthIndicatorService as an injection token, which a lazy import cannot give Nest's dependency injection).
 *
 * @packageDocumentation
 * @module nestjs-amqp-retry/health
 */
export { RetryHealthIndicator } from './retry.health-indicator.js';
export type { HealthReport } from './health.report.js';
