import { spawn } from 'node:child_process';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { ParkedMessages } from 'nestjs-amqp-retry';
import { RetryServer } from 'nestjs-amqp-retry/transport';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { buildCli } from '../support/cli.js';
import { useSuite } from '../support/suite.js';

/** What the handler saw: the order, and whether the call succeeded. */
interface Call {
  id: number;
  ok: boolean;
}

@Controller()
class ReplayedOrders {
  failing = true;
  readonly calls: Call[] = [];

  @EventPattern<string>('order.created')
  created(@Payload() order: { id: number }): void {
    this.calls.push({ id: order.id, ok: !this.failing });
    if (this.failing) throw new Error(`order ${order.id} cannot be created yet`);
  }
}

@Module({ controllers: [ReplayedOrders] })
class ReplayedOrdersModule {}

/** The bin as `npx --no-install amqp-retry` runs it (built in beforeAll, as test/ops/parked-cli.e2e-spec.ts does). */
const CLI = 'node_modules/.bin/amqp-retry';

function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, AMQP_URL }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end();
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/*
 * A body without Nest's envelope is an event named by the routing key it was published with (its retries: the key in
 * x-death). A replay publishes the parked copy to its queue by name, without x-death: the server must still read the
 * publisher's key, or the replayed message is parked again as no-handler instead of running its handler.
 */
describe('RetryServer: a replayed message runs the handler of the pattern it was published with', () => {
  const suite = useSuite<INestMicroservice>('e2e.transport.replay');
  let exchange: string;
  let errorQueue: string;
  let parked: ParkedMessages | undefined;

  beforeAll(() => buildCli(), 120_000);
  beforeEach(() => {
    exchange = uniqueName('e2e.transport.replay.shop');
    suite.extraExchanges.push(exchange);
    errorQueue = `${suite.queue}.error`;
  });

  /** Starts the server (2 attempts, 100 ms apart), publishes a bare and an enveloped order, and waits until both are parked. */
  async function parkBoth(): Promise<ReplayedOrders> {
    const { broker, queue } = suite;
    const server = new RetryServer({ url: AMQP_URL, queue, exchange, delays: [100], maxAttempts: 2, delayedDelivery: false });
    const app = (suite.app = await NestFactory.createMicroservice(ReplayedOrdersModule, { strategy: server, logger: ['error'] }));
    await app.listen();
    await broker.publish(exchange, 'order.created', { id: 1 }); // bare: named by its routing key
    await broker.publish(exchange, 'order.created', { pattern: 'order.created', data: { id: 2 } }); // Nest's envelope
    await waitFor(async () => (await broker.count(errorQueue)) === 2, 'both parked', 15_000);
    const orders = app.get(ReplayedOrders);
    expect(orders.calls.map((c) => c.id).sort()).toEqual([1, 1, 2, 2]); // both ran their two attempts
    parked = await ParkedMessages.connect({ url: AMQP_URL, queues: [queue] });
    suite.clients.push(parked);
    expect((await parked.list({ queue })).items.map((v) => v.reason)).toEqual(['exhausted', 'exhausted']);
    return orders;
  }

  /** After a replay: each order ran once more and succeeded, and nothing is parked again (no no-handler park). */
  async function expectHandledOnce(orders: ReplayedOrders, callsBefore: number): Promise<void> {
    const { broker, queue } = suite;
    // Either both replayed calls happen, or a message is parked again: wait for whichever, then compare.
    await waitFor(
      async () => orders.calls.length - callsBefore + ((await broker.count(errorQueue)) ?? 0) >= 2,
      'both replayed messages settled',
      15_000,
    );
    const reparked = (await parked!.list({ queue })).items.map((v) => `${v.reason}: ${v.error}`);
    expect(reparked).toEqual([]);
    expect(
      orders.calls
        .slice(callsBefore)
        .map((c) => [c.id, c.ok])
        .sort(),
    ).toEqual([
      [1, true],
      [2, true],
    ]);
    await waitFor(async () => (await broker.count(queue)) === 0, 'the queue empty');
    expect(orders.calls.length - callsBefore).toBe(2); // exactly once each
    expect(await broker.count(errorQueue)).toBe(0);
  }

  it('through ParkedMessages.replay, also when it fails again: retried, parked as exhausted, replayed once more', async () => {
    const { broker, queue } = suite;
    const orders = await parkBoth();
    // Replayed while the cause is still there: both get their two attempts again (the bare one's retry named by the route it kept).
    expect(await parked!.replay({ errorQueue })).toMatchObject({ matched: 2, replayed: 2, failed: [] });
    await waitFor(() => orders.calls.length === 8, 'two more attempts each', 15_000);
    await waitFor(async () => (await broker.count(errorQueue)) === 2, 'both parked again', 15_000);
    const again = (await parked!.list({ queue })).items;
    expect(again.map((v) => [v.reason, v.attempts, v.headers['x-original-routing-key']])).toEqual([
      ['exhausted', 2, 'order.created'],
      ['exhausted', 2, 'order.created'],
    ]);
    expect(
      orders.calls
        .slice(4)
        .map((c) => c.id)
        .sort(),
    ).toEqual([1, 1, 2, 2]);

    orders.failing = false;
    const callsBefore = orders.calls.length;
    expect(await parked!.replay({ errorQueue })).toEqual({ matched: 2, replayed: 2, failed: [], dryRun: false });
    await expectHandledOnce(orders, callsBefore);
  });

  it('through the CLI, run as a child process', async () => {
    const orders = await parkBoth();
    orders.failing = false;
    const callsBefore = orders.calls.length;
    const replayed = await runCli(['parked', 'replay', '--queue', suite.queue, '--all']);
    expect(replayed.stderr).toBe('');
    expect(replayed.code).toBe(0);
    expect(replayed.stdout).toContain('Replayed 2 of 2');
    await expectHandledOnce(orders, callsBefore);
  });
});
