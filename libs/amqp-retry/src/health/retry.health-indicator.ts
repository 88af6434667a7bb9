import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { RetryEngine } from '../engine/retry.engine.js';
import { describeHealth } from './health.report.js';

/**
 * A @nestjs/terminus health indicator: down while a connection to RabbitMQ is down or a queue is not consumed (its
 * consumer is recovering, or its channel closed), and the result names which. Add it to the providers of a module
 * that imports TerminusModule.
 *
 * @example
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.retry.isHealthy('rabbitmq')]); }
 * ```
 */
@Injectable()
export class RetryHealthIndicator {
  constructor(
    private readonly engine: RetryEngine,
    private readonly indicators: HealthIndicatorService,
  ) {}

  /** Terminus's result under `key` (default 'rabbitmq'): up or down as the HealthReport says, with the rest of it as details. */
  isHealthy<const Key extends string = 'rabbitmq'>(key: Key = 'rabbitmq' as Key): HealthIndicatorResult<Key> {
    const indicator = this.indicators.check(key);
    const { healthy, ...data } = describeHealth(this.engine.health());
    return healthy ? indicator.up(data) : indicator.down(data);
  }
}
