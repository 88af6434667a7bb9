import {
  type CanActivate,
  type DynamicModule,
  type ExecutionContext,
  Injectable,
  type INestApplication,
  type Provider,
  UnauthorizedException,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ParkedMessages, RetryDashboardModule, RetryModule, type RetryDashboardOptions, type RetryModuleOptions } from 'nestjs-amqp-retry';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SUITE_OPTIONS } from './suite.js';

/** The Authorization header BearerGuard admits. */
export const OPERATOR_AUTHORIZATION = 'Bearer ops-secret';

/** A user's guard for the page: admits requests with the operators' bearer token, answers 401 to the others. */
@Injectable()
export class BearerGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    if (request.headers.authorization !== OPERATOR_AUTHORIZATION) throw new UnauthorizedException('operators only');
    return true;
  }
}

/** A request the application answered, as the server saw it (the browser may hide a refused cross-site answer). */
export interface Served {
  method: string;
  path: string;
  status: number;
}

/**
 * A Nest HTTP application (Express) with RetryModule, the given handlers and the parked-messages page, listening on
 * a random port of 127.0.0.1. `dashboard` is the options of forRoot, or a module built otherwise (forRootAsync).
 * `url` is its base address, without a trailing slash. `parked` replaces the ParkedMessages that RetryModule provides;
 * `globalPrefix` is set with app.setGlobalPrefix; `retryOptions` are RetryModule's (default SUITE_OPTIONS: a shutdown
 * timeout of 2 s, as every suite's app has; with the default 30 s, a stop that waits its whole bound takes 62 s, more
 * than a Jest hook's 60).
 */
export async function startDashboardApp(
  providers: Provider[],
  dashboard: RetryDashboardOptions | DynamicModule,
  parked?: ParkedMessages,
  globalPrefix?: string,
  retryOptions: RetryModuleOptions = SUITE_OPTIONS,
): Promise<{ app: INestApplication; url: string; served: Served[] }> {
  const builder = Test.createTestingModule({
    imports: [RetryModule.forRoot(retryOptions), isModule(dashboard) ? dashboard : RetryDashboardModule.forRoot(dashboard)],
    providers,
  });
  if (parked) builder.overrideProvider(ParkedMessages).useValue(parked);
  const moduleRef = await builder.compile();
  const app = moduleRef.createNestApplication({ logger: process.env.TEST_LOGS ? ['log', 'warn', 'error', 'debug'] : false });
  if (globalPrefix) app.setGlobalPrefix(globalPrefix);
  const served: Served[] = [];
  app.use((request: IncomingMessage, response: ServerResponse, next: () => void) => {
    response.on('finish', () => served.push({ method: request.method ?? '', path: request.url ?? '', status: response.statusCode }));
    next();
  });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace(/\/$/, '');
  return { app, url, served };
}

const isModule = (value: RetryDashboardOptions | DynamicModule): value is DynamicModule => 'module' in value;
