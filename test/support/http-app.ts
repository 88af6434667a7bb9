import type { INestApplication, Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RetryDashboardModule, RetryModule, type RetryDashboardOptions } from 'nestjs-amqp-retry';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { TEST_OPTIONS } from './app.js';

/** A request the application answered, as the server saw it (the browser may hide a refused cross-site answer). */
export interface Served {
  method: string;
  path: string;
  status: number;
}

/**
 * A Nest HTTP application (Express) with RetryModule, the given handlers and the parked-messages page, listening on
 * a random port of 127.0.0.1. `url` is its base address, without a trailing slash.
 */
export async function startHttpApp(
  providers: Provider[],
  dashboard: RetryDashboardOptions,
): Promise<{ app: INestApplication; url: string; served: Served[] }> {
  const moduleRef = await Test.createTestingModule({
    imports: [RetryModule.forRoot(TEST_OPTIONS), RetryDashboardModule.forRoot(dashboard)],
    providers,
  }).compile();
  const app = moduleRef.createNestApplication({ logger: process.env.TEST_LOGS ? ['log', 'warn', 'error', 'debug'] : false });
  const served: Served[] = [];
  app.use((request: IncomingMessage, response: ServerResponse, next: () => void) => {
    response.on('finish', () => served.push({ method: request.method ?? '', path: request.url ?? '', status: response.statusCode }));
    next();
  });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace(/\/$/, '');
  return { app, url, served };
}
