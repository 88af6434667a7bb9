import { Controller, Get, type INestApplication, type ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { RetryModule, type RetryModuleOptions } from 'nestjs-amqp-retry';
import { RetryHealthIndicator } from 'nestjs-amqp-retry/health';

@Controller()
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly retry: RetryHealthIndicator,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.retry.isHealthy('rabbitmq')]);
  }
}

/**
 * An HTTP application (Express) with RetryModule, terminus and a GET /health, listening on a free port; `extra`
 * adds controllers and providers. Returns the application and its base URL.
 */
export async function startHealthApp(
  options: RetryModuleOptions,
  extra: Pick<ModuleMetadata, 'controllers' | 'providers'>,
): Promise<{ app: INestApplication; base: string }> {
  const moduleRef = await Test.createTestingModule({
    imports: [RetryModule.forRoot(options), TerminusModule.forRoot({ logger: false })],
    controllers: [HealthController, ...(extra.controllers ?? [])],
    providers: [RetryHealthIndicator, ...(extra.providers ?? [])],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: process.env.TEST_LOGS ? ['log', 'warn', 'error', 'debug'] : false });
  await app.listen(0, '127.0.0.1');
  return { app, base: await app.getUrl() };
}

/** GET `url`: the status and the parsed JSON body (or the text). */
export async function get(url: string): Promise<{ status: number; body: unknown; text: string }> {
  const response = await fetch(url);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON (a Prometheus scrape)
  }
  return { status: response.status, body, text };
}
