import { Controller, Get, Header } from '@nestjs/common';
import { register } from 'prom-client';

/** GET /metrics: prom-client's default registry, where RetryModule's `metrics: true` registers its metrics. */
@Controller('metrics')
export class MetricsController {
  @Get()
  @Header('Content-Type', register.contentType)
  scrape(): Promise<string> {
    return register.metrics();
  }
}
