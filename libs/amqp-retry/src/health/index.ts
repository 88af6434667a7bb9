// The `nestjs-amqp-retry/health` entry: the only one that imports @nestjs/terminus, so that applications without
// health checks never load it (the indicator needs terminus's HealthIndicatorService as an injection token, which a
// lazy import cannot give Nest's dependency injection).
export { RetryHealthIndicator } from './retry.health-indicator.js';
export type { HealthReport } from './health.report.js';
