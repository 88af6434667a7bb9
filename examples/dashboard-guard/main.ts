// The parked-messages page (RetryDashboardModule) in an HTTP app, behind a guard: HTTP Basic auth with the credentials
// from the environment, the recipe of docs/operations.md ("Guarding the page"). Every request under the page's path
// (the page, its assets, its API) runs the guard; without a guard the page answers 403 to everyone. Serve it over HTTPS:
// Basic credentials travel with every request.
//   OPS_USER=ops OPS_PASSWORD=secret node dist/dashboard-guard/main.js   the page at http://127.0.0.1:3000/retry
//   EXAMPLE_SMOKE=1 node dist/dashboard-guard/main.js   asks for the page and its API with and without credentials
import 'reflect-metadata';
import { type CanActivate, type ExecutionContext, Injectable, Module, UnauthorizedException } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RetryDashboardModule, RetryModule, RetryWithBackoff } from 'nestjs-amqp-retry';
import { AMQP_URL, SMOKE, deleteHandlerTopology, expectEqual, smokeRun, suffix } from '../shared/smoke';

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** HTTP Basic auth for the parked-messages page: the browser asks once, then sends the credentials with every request. */
@Injectable()
export class OpsBasicAuthGuard implements CanActivate {
  private readonly expected: Buffer;

  constructor() {
    const { OPS_USER: user, OPS_PASSWORD: password } = process.env;
    if (!user || !password) throw new Error('Set OPS_USER and OPS_PASSWORD for the parked-messages page');
    this.expected = digest(`${user}:${password}`);
  }

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const [scheme, encoded] = (http.getRequest<IncomingMessage>().headers.authorization ?? '').split(' ');
    const given = scheme === 'Basic' && encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '';
    if (given && timingSafeEqual(digest(given), this.expected)) return true;
    http.getResponse<ServerResponse>().setHeader('WWW-Authenticate', 'Basic realm="parked messages", charset="UTF-8"');
    throw new UnauthorizedException();
  }
}

const QUEUE = `shop.orders${suffix}`;
const POLICY = { delays: ['1s'] };

@Injectable()
export class OrdersHandler {
  @RetryWithBackoff({ queue: QUEUE, ...POLICY })
  async handle(): Promise<void> {} // the page shows this application's handler queues and their parked messages
}

@Module({
  imports: [
    RetryModule.forRoot({ url: AMQP_URL, delayedDelivery: false }),
    RetryDashboardModule.forRoot({ path: '/retry', guard: OpsBasicAuthGuard }),
  ],
  providers: [OrdersHandler],
})
export class AppModule {}

async function smoke(): Promise<void> {
  process.env.OPS_USER ??= 'ops';
  process.env.OPS_PASSWORD ??= 'example-password';
  const app = await NestFactory.create(AppModule, { logger: ['error'] });
  try {
    await app.listen(0, '127.0.0.1'); // a free port
    const base = `${await app.getUrl()}/retry`;
    const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    const get = async (path: string, authorization?: string) => {
      const response = await fetch(`${base}${path}`, { headers: authorization ? { authorization } : {} });
      return { status: response.status, body: await response.text(), challenge: response.headers.get('www-authenticate') };
    };
    const operator = basic(process.env.OPS_USER, process.env.OPS_PASSWORD);

    const anonymous = await get('');
    expectEqual(
      { status: anonymous.status, challenge: anonymous.challenge?.startsWith('Basic') },
      { status: 401, challenge: true },
      'the page without credentials',
    );
    expectEqual((await get('/api/queues')).status, 401, 'the API without credentials');
    expectEqual((await get('', basic(process.env.OPS_USER, 'wrong'))).status, 401, 'the page with a wrong password');

    const page = await get('', operator);
    expectEqual({ status: page.status, html: page.body.includes('<html') }, { status: 200, html: true }, 'the page with credentials');
    const queues = await get('/api/queues', operator);
    expectEqual(
      { status: queues.status, listsQueue: queues.body.includes(JSON.stringify(QUEUE)) },
      { status: 200, listsQueue: true },
      'the API with credentials',
    );
  } finally {
    await app.close();
  }
}

async function main(): Promise<void> {
  if (SMOKE) return smokeRun('dashboard-guard', smoke, (channel) => deleteHandlerTopology(channel, QUEUE, POLICY));
  const app = await NestFactory.create(AppModule);
  app.enableShutdownHooks();
  await app.listen(process.env.PORT ?? 3000, '127.0.0.1');
}

void main();
