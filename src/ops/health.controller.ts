import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { RetryHealthIndicator } from 'nestjs-amqp-retry/health';

/** GET /health: 200 while RabbitMQ is connected and every queue consumed, else 503 saying what is wrong. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly rabbitmq: RetryHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.rabbitmq.isHealthy('rabbitmq')]);
  }
}
