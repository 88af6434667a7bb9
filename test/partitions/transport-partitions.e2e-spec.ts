import { Controller, Module, type DynamicModule, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientRMQ, Ctx, EventPattern, MessagePattern, Payload, RmqRecordBuilder } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { ParkedMessages, RetryConfigError, RetryEngine, RetryModule, retryTopologyNames } from 'nestjs-amqp-retry';
import { RetryClient, RetryRmqContext, RetryRpcExceptionFilter, RetryServer, type RetryServerOptions } from 'nestjs-amqp-retry/transport';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { usePartitionSuite } from '../support/partitions.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { TcpProxy } from '../support/tcp-proxy.js';

type Step = { key: string; seq: number };
interface Call extends Step {
  app: string;
  pattern: string;
  attempt: number;
  /** The queue the delivery came from: a partition's. */
  queue: string;
  /** The queues of its x-death entries: the partition, and the tiers it waited in. */
  deaths: string[];
  at: number;
}

const COUNT = 4;
const KEY_HEADER = 'x-account-id';
/** 'account.audit' has a schedule of its own: its first failures are published into its first tier, per partition. */
const AUDIT_DELAYS = [100];

/**
 * One message in ten fails its first attempt, spread over keys and sequence numbers (were every key to fail at once,
 * the holds would fill the consumer's window).
 */
const failsFirst = ({ key, seq }: Step) => (Number(key.slice(1)) * 31 + seq * 17) % 10 === 3;
/** How many of `keys` x `perKey` messages fail their first attempt. */
const failuresAmong = (keys: number, perKey: number) =>
  Array.from({ length: keys * perKey }, (_, n) => failsFirst({ key: `k${n % keys}`, seq: Math.floor(n / keys) })).filter(Boolean).length;

/** What both instances' controllers write to: every call, and the keys running now (two at once is a violation). */
class Recorder {
  readonly calls: Call[] = [];
  private readonly running = new Map<string, number>();
  overlap = 0;

  async run(app: string, pattern: string, step: Step, ctx: RetryRmqContext, fails: boolean): Promise<void> {
    const retry = ctx.getRetryContext();
    this.running.set(step.key, (this.running.get(step.key) ?? 0) + 1);
    if (this.running.get(step.key)! > 1) this.overlap++;
    await new Promise((resolve) => setTimeout(resolve, 2));
    this.running.set(step.key, this.running.get(step.key)! - 1);
    const deaths = retry.deaths.map((d) => d.queue);
    this.calls.push({ ...step, app, pattern, attempt: retry.attempt, queue: retry.queue, deaths, at: Date.now() });
    if (fails) throw new Error(`${pattern} ${step.key}/${step.seq} fails attempt ${retry.attempt}`);
  }

  /** The calls of 'account.event' that succeeded. */
  successes(): Call[] {
    return this.calls.filter((c) => c.pattern === 'account.event' && !(c.attempt === 1 && failsFirst(c)));
  }
}

function accountsModule(recorder: Recorder, app: string): DynamicModule {
  @Controller()
  class AccountsController {
    @EventPattern<string>('account.event')
    event(@Payload() step: Step, @Ctx() ctx: RetryRmqContext): Promise<void> {
      return recorder.run(app, 'account.event', step, ctx, ctx.getRetryContext().attempt === 1 && failsFirst(step));
    }

    @EventPattern<string>('account.audit', { retry: { delays: AUDIT_DELAYS, maxAttempts: 3 } })
    audit(@Payload() step: Step, @Ctx() ctx: RetryRmqContext): Promise<void> {
      return recorder.run(app, 'account.audit', step, ctx, ctx.getRetryContext().attempt === 1);
    }

    /** Always fails: parked after its own 2 attempts (the server's are 3), in its partition's parking queue. */
    @EventPattern<string>('account.poison', { retry: { maxAttempts: 2 } })
    poison(@Payload() step: Step, @Ctx() ctx: RetryRmqContext): Promise<void> {
      return recorder.run(app, 'account.poison', step, ctx, true);
    }

    @MessagePattern('account.balance')
    balance(@Payload() query: { key: string }, @Ctx() ctx: RetryRmqContext): { key: string; handled: number; queue: string } {
      const handled = recorder.successes().filter((c) => c.key === query.key).length;
      return { key: query.key, handled, queue: ctx.getRetryContext().queue };
    }
  }
  @Module({ controllers: [AccountsController] })
  class AccountsModule {}
  return { module: AccountsModule };
}

describe('a partitioned RetryServer queue (the microservices transport)', () => {
  const suite = usePartitionSuite('e2e.srvparts', COUNT);
  let exchange: string;
  let apps: Array<{ app: INestMicroservice; server: RetryServer }> = [];
  const clients: Array<{ close(): unknown }> = [];

  beforeEach(() => {
    const { broker, queue } = suite;
    exchange = `${queue}.in`;
    apps = [];
    suite.afterThis(async () => {
      for (const client of clients.splice(0)) await client.close();
      for (const { app } of apps) await app.close();
    });
    suite.afterThis(async () => {
      for (let i = 0; i < COUNT; i++) {
        for (const tier of retryTopologyNames(`${queue}.p${i}`, { delays: AUDIT_DELAYS }).tiers) await broker.channel.deleteQueue(tier);
      }
      await broker.channel.deleteExchange(exchange);
      // Nothing is declared under the server's own queue name but the hash exchange; should a regression declare it, no trace stays.
      await broker.deleteRetryTopology(queue, { queues: retryTopologyNames(queue, { delays: AUDIT_DELAYS }).tiers });
    });
  });

  const serverOptions = (whileRetrying: 'hold' | 'continue'): RetryServerOptions => ({
    url: AMQP_URL,
    queue: suite.queue,
    exchange,
    delays: ['200ms'],
    maxAttempts: 3,
    prefetch: 100,
    delayedDelivery: false,
    shutdownTimeout: '2s',
    partitions: { count: COUNT, key: { header: KEY_HEADER }, whileRetrying, heartbeat: '200ms' },
  });

  async function startInstance(recorder: Recorder, name: string, options: RetryServerOptions, logger?: RecordingLogger) {
    const server = new RetryServer(options);
    const app = await NestFactory.createMicroservice(accountsModule(recorder, name), { strategy: server, logger: logger ?? ['error'] });
    app.useGlobalFilters(new RetryRpcExceptionFilter()); // the failures are expected: no stack per failure in the log
    await app.listen();
    apps.push({ app, server });
    return server;
  }

  const statusOf = (server: RetryServer) => server.unwrap<RetryEngine>().partitions()[0];
  const ownedBy = (server: RetryServer) => statusOf(server)?.partitions.filter((p) => p.consuming).length ?? 0;

  const client = () => {
    const c = new RetryClient({ url: AMQP_URL, exchange, delayedDelivery: false });
    clients.push(c);
    return c;
  };

  /** Nest's own client publishing to the exchange: `wildcards` makes it publish there with the pattern as routing key. */
  const nestClient = () => {
    const c = new ClientRMQ({ urls: [AMQP_URL], exchange, wildcards: true });
    clients.push(c);
    return c;
  };

  /**
   * Publishes `perKey` messages of each key in order, each key through one publisher (order holds per connection):
   * RetryClient, plain amqplib, and (when given) Nest's ClientRMQ in turn.
   */
  async function publish(
    retryClient: RetryClient,
    pattern: string,
    keys: number,
    perKey: number,
    { bare = false, nest }: { bare?: boolean; nest?: ClientRMQ } = {},
  ): Promise<void> {
    const publishers = nest ? 3 : 2;
    for (let seq = 0; seq < perKey; seq++) {
      const sends: Array<Promise<unknown>> = [];
      for (let k = 0; k < keys; k++) {
        const step = { key: `k${k}`, seq };
        const headers = { [KEY_HEADER]: step.key };
        if (k % publishers === 0) {
          sends.push(lastValueFrom(retryClient.emit(pattern, step, { headers }), { defaultValue: undefined }));
        } else if (k % publishers === 2 && nest) {
          const record = new RmqRecordBuilder(step).setOptions({ headers }).build();
          sends.push(lastValueFrom(nest.emit(pattern, record), { defaultValue: undefined }));
        } else {
          // Nest's envelope, or (bare) the body alone, whose pattern is the routing key it was published with.
          const body = bare ? step : { pattern, data: step };
          suite.broker.channel.publish(exchange, pattern, Buffer.from(JSON.stringify(body)), {
            headers,
            contentType: 'application/json',
            persistent: true,
          });
        }
      }
      await Promise.all(sends);
    }
    await (suite.broker.channel as unknown as { waitForConfirms(): Promise<void> }).waitForConfirms();
  }

  /** The successful calls of each key, in the order they ran, must be 0, 1, 2, ... */
  function outOfOrder(successes: Call[]): number {
    const last = new Map<string, number>();
    let violations = 0;
    for (const s of successes) {
      if (s.seq !== (last.get(s.key) ?? -1) + 1) violations++;
      last.set(s.key, Math.max(last.get(s.key) ?? -1, s.seq));
    }
    return violations;
  }

  it("spreads the partitions over two servers and runs every pattern on each (RetryClient, ClientRMQ and amqplib publishing): in order per key (hold), nothing lost, a poison parked in its partition's queue, requests answered", async () => {
    const recorder = new Recorder();
    const a = await startInstance(recorder, 'a', serverOptions('hold'));
    const b = await startInstance(recorder, 'b', serverOptions('hold'));
    await waitFor(() => ownedBy(a) === 2 && ownedBy(b) === 2, 'two partitions on each server', 10_000);
    const [sa, sb] = [statusOf(a), statusOf(b)];
    expect(sa.queue).toBe(suite.queue);
    expect(sa.partitions.map((p) => p.queue)).toEqual([0, 1, 2, 3].map((i) => `${suite.queue}.p${i}`));
    expect(sa.partitions.map((p) => p.owner)).toEqual(sb.partitions.map((p) => p.owner)); // one view
    expect(sa.partitions.map((p) => p.mine)).toEqual(sb.partitions.map((p) => !p.mine));

    const KEYS = 30;
    const PER_KEY = 10;
    const retryClient = client();
    const started = Date.now();
    await publish(retryClient, 'account.event', KEYS, PER_KEY, { nest: nestClient() });
    await waitFor(() => recorder.successes().length >= KEYS * PER_KEY, 'every message handled', 30_000);
    const tookMs = Date.now() - started;

    const successes = recorder.successes();
    expect(successes.length).toBe(KEYS * PER_KEY); // none twice
    expect(new Set(successes.map((s) => `${s.key}/${s.seq}`)).size).toBe(KEYS * PER_KEY); // none lost
    expect(outOfOrder(successes)).toBe(0);
    expect(recorder.overlap).toBe(0);
    // Retried in place: the failed first attempts, each followed by a second that succeeded, on the same partition.
    const failed = recorder.calls.filter((c) => c.pattern === 'account.event' && c.attempt === 1 && failsFirst(c));
    const expectedFailures = failuresAmong(KEYS, PER_KEY);
    expect(failed.length).toBe(expectedFailures);
    expect(successes.filter((s) => s.attempt === 2).length).toBe(expectedFailures);
    // Each key on one partition, each partition on one server, both servers at work.
    const partitionOf = new Map<string, Set<string>>();
    for (const s of successes) partitionOf.set(s.key, (partitionOf.get(s.key) ?? new Set()).add(s.queue));
    expect([...partitionOf.values()].every((qs) => qs.size === 1)).toBe(true);
    const byServer = { a: successes.filter((s) => s.app === 'a').length, b: successes.filter((s) => s.app === 'b').length };
    expect(byServer.a).toBeGreaterThan(0);
    expect(byServer.b).toBeGreaterThan(0);
    for (const s of successes) expect(statusOf(s.app === 'a' ? a : b).partitions.find((p) => p.queue === s.queue)?.consuming).toBe(true);
    const perPartition = [0, 1, 2, 3].map((i) => successes.filter((s) => s.queue === `${suite.queue}.p${i}`).length);
    expect(perPartition.every((n) => n > 0)).toBe(true);

    // A request is answered from whichever partition its key hashes to.
    const record = new RmqRecordBuilder({ key: 'k4' }).setOptions({ headers: { [KEY_HEADER]: 'k4' } }).build();
    const answer = await firstValueFrom(retryClient.send<{ key: string; handled: number; queue: string }>('account.balance', record));
    expect(answer).toEqual({ key: 'k4', handled: PER_KEY, queue: successes.find((s) => s.key === 'k4')!.queue });

    // A poison message: its pattern's own 2 attempts (in place), then parked in its partition's parking queue.
    await lastValueFrom(retryClient.emit('account.poison', { key: 'k7', seq: 0 }, { headers: { [KEY_HEADER]: 'k7' } }), { defaultValue: undefined });
    const home = successes.find((s) => s.key === 'k7')!.queue;
    const [parked] = await suite.broker.take(`${home}.error`, 1, 10_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-original-queue': home });
    expect(recorder.calls.filter((c) => c.pattern === 'account.poison').map((c) => [c.attempt, c.queue])).toEqual([
      [1, home],
      [2, home],
    ]);
    for (let i = 0; i < COUNT; i++) expect(await suite.broker.count(`${suite.queue}.p${i}.error`)).toBe(0);

    console.log(
      `transport partitions (hold): ${KEYS * PER_KEY} messages over ${KEYS} keys, ${failed.length} retried in place, handled in ${tookMs} ms; ` +
        `server a ${byServer.a} on ${ownedBy(a)} partitions, b ${byServer.b} on ${ownedBy(b)}; per partition ${perPartition.join('/')}`,
    );
  });

  it("hands a closing server's partitions to the other at once, between messages: order kept, nothing lost", async () => {
    const recorder = new Recorder();
    const a = await startInstance(recorder, 'a', serverOptions('hold'));
    const b = await startInstance(recorder, 'b', serverOptions('hold'));
    await waitFor(() => ownedBy(a) === 2 && ownedBy(b) === 2, 'two partitions on each server', 10_000);
    const KEYS = 20;
    const PER_KEY = 30;
    await publish(client(), 'account.event', KEYS, PER_KEY);
    await waitFor(() => recorder.successes().length > 100, 'a first part handled', 20_000);
    const leaving = apps.shift()!;
    const closedAt = Date.now();
    const closing = leaving.app.close().then(() => Date.now());
    const takenAt = await waitFor(() => ownedBy(b) === COUNT && Date.now(), 'the survivor owns every partition', 5_000);
    expect(takenAt - closedAt).toBeLessThan(1_000);
    expect((await closing) - closedAt).toBeLessThan(200 + 2_000); // a retry's delay + margin
    await waitFor(() => recorder.successes().length >= KEYS * PER_KEY, 'every message handled', 30_000);
    const successes = recorder.successes();
    expect(successes.length).toBe(KEYS * PER_KEY);
    expect(new Set(successes.map((s) => `${s.key}/${s.seq}`)).size).toBe(KEYS * PER_KEY);
    expect(outOfOrder(successes)).toBe(0);
    expect(recorder.overlap).toBe(0);
    const closedDoneAt = await closing; // the leaver finishes what it runs, then nothing more
    expect(new Set(successes.filter((s) => s.at > closedDoneAt).map((s) => s.app))).toEqual(new Set(['b']));
    console.log(
      `transport partitions (hand-over): ${KEYS * PER_KEY} messages over ${KEYS} keys; the survivor owned all ${takenAt - closedAt} ms after the close began, ` +
        `the closing server was done after ${(await closing) - closedAt} ms; a handled ${successes.filter((s) => s.app === 'a').length}, b ${successes.filter((s) => s.app === 'b').length}`,
    );
  });

  it("'continue' retries each partition's messages through that partition's tiers, bodies without the envelope and patterns with their own schedule too", async () => {
    const recorder = new Recorder();
    const a = await startInstance(recorder, 'a', serverOptions('continue'));
    await waitFor(() => ownedBy(a) === COUNT, 'every partition on the one server', 10_000);
    const retryClient = client();
    const KEYS = 20;
    await publish(retryClient, 'account.event', KEYS, 5, { bare: true });
    await publish(retryClient, 'account.audit', KEYS, 1);
    const events = KEYS * 5;
    await waitFor(
      () => recorder.successes().length >= events && recorder.calls.filter((c) => c.pattern === 'account.audit' && c.attempt === 2).length >= KEYS,
      'every message handled',
      30_000,
    );
    const successes = recorder.successes();
    expect(successes.length).toBe(events);
    expect(new Set(successes.map((s) => `${s.key}/${s.seq}`)).size).toBe(events);
    // The server's schedule: a nack into the partition's own first tier, back to the same partition.
    const retried = successes.filter((s) => s.attempt === 2);
    expect(retried.length).toBe(failuresAmong(KEYS, 5));
    for (const s of retried) {
      expect(s.deaths).toContain(s.queue);
      expect(s.deaths).toContain(retryTopologyNames(s.queue, { delays: [200] }).tiers[0]);
    }
    // A pattern with its own schedule: moved into its partition's own first tier, then back.
    const audits = recorder.calls.filter((c) => c.pattern === 'account.audit' && c.attempt === 2);
    expect(audits.length).toBe(KEYS);
    for (const s of audits) {
      expect(s.attempt).toBe(2);
      expect(s.deaths).toContain(retryTopologyNames(s.queue, { delays: AUDIT_DELAYS }).tiers[0]);
    }
    expect(new Set(audits.map((s) => s.queue)).size).toBeGreaterThan(1);
    for (let i = 0; i < COUNT; i++) expect(await suite.broker.count(`${suite.queue}.p${i}.error`)).toBe(0);
  });

  it("partitions a hybrid application's RetryServer on the module's engine: its page's figures and parking list show the partitions", async () => {
    const recorder = new Recorder();
    const app = await NestFactory.create(
      { module: class HybridAccounts {}, imports: [RetryModule.forRoot({ url: AMQP_URL, delayedDelivery: false }), accountsModule(recorder, 'h')] },
      { logger: ['error'] },
    );
    const engine = app.get(RetryEngine);
    const server = new RetryServer({ ...serverOptions('hold'), engine });
    app.useGlobalFilters(new RetryRpcExceptionFilter());
    app.connectMicroservice({ strategy: server }, { inheritAppConfig: true });
    try {
      await app.startAllMicroservices();
      await app.init();
      await waitFor(() => engine.partitions()[0]?.partitions.every((p) => p.consuming), 'every partition on the one instance', 10_000);
      const [status] = engine.partitions();
      expect(status.queue).toBe(suite.queue);
      expect(status.partitions.map((p) => [p.queue, p.mine])).toEqual([0, 1, 2, 3].map((i) => [`${suite.queue}.p${i}`, true]));
      // What the page and ParkedMessages list: each partition with its parking queue and its patterns' tiers.
      const listed = await app.get(ParkedMessages).queues();
      for (let i = 0; i < COUNT; i++) {
        const part = listed.find((q) => q.queue === `${suite.queue}.p${i}`);
        expect(part?.errorQueue).toBe(`${suite.queue}.p${i}.error`);
        expect(part?.tiers.map((t) => t.queue)).toContain(retryTopologyNames(`${suite.queue}.p${i}`, { delays: AUDIT_DELAYS }).tiers[0]);
      }
      await publish(client(), 'account.event', 6, 3);
      await waitFor(() => recorder.successes().length >= 18, 'every message handled', 10_000);
      expect(outOfOrder(recorder.successes())).toBe(0);
      for (const c of clients.splice(0)) await c.close();
    } finally {
      await app.close();
    }
    for (let i = 0; i < COUNT; i++) expect(await suite.broker.consumers(`${suite.queue}.p${i}`)).toBe(0);
  });

  it('takes over the queue of the unpartitioned server it replaces: what waited there is handled once, and the exchange no longer feeds it', async () => {
    // The server as it ran before `partitions`: its queue bound to the exchange with the patterns, then stopped.
    const { partitions: _unused, ...unpartitioned } = serverOptions('hold');
    void _unused;
    const before = await startInstance(new Recorder(), 'old', unpartitioned);
    await waitFor(
      () =>
        before
          .unwrap<RetryEngine>()
          .health()
          .queues.every((q) => q.consuming),
      'the old server consuming',
      10_000,
    );
    await apps.shift()!.app.close();
    const retryClient = client();
    await publish(retryClient, 'account.event', 4, 2, { bare: true }); // 8 left waiting in the old queue
    expect(await suite.broker.count(suite.queue)).toBe(8);

    const recorder = new Recorder();
    const logger = new RecordingLogger();
    const a = await startInstance(recorder, 'a', serverOptions('hold'), logger);
    await waitFor(() => ownedBy(a) === COUNT, 'every partition on the one server', 10_000);
    await publish(retryClient, 'account.event', 4, 1); // published after the change: seq 0 of each key again
    await waitFor(() => recorder.successes().length >= 12, 'what waited in the old queue handled too', 15_000);
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'the old queue emptied', 5_000);
    expect(logger.count(new RegExp(`the queue "${suite.queue}" of this handler before partitions exists`))).toBe(1);
    for (const { app } of apps.splice(0)) await app.close();
    const successes = recorder.successes();
    expect(successes.length).toBe(12); // none twice
    const times = new Map<string, number>();
    for (const s of successes) times.set(`${s.key}/${s.seq}`, (times.get(`${s.key}/${s.seq}`) ?? 0) + 1);
    expect(Object.fromEntries(times)).toEqual(
      Object.fromEntries(
        [0, 1, 2, 3].flatMap((k) => [
          [`k${k}/0`, 2],
          [`k${k}/1`, 1],
        ]),
      ), // none lost: seq 0 before and after the change
    );
    // The old queue is cut from the exchange: a message published now (and confirmed) is not copied there.
    suite.broker.channel.publish(exchange, 'account.event', Buffer.from(JSON.stringify({ key: 'k0', seq: 9 })), {
      headers: { [KEY_HEADER]: 'k0' },
      persistent: true,
    });
    await (suite.broker.channel as unknown as { waitForConfirms(): Promise<void> }).waitForConfirms();
    expect(await suite.broker.count(suite.queue)).toBe(0);

    // Deleted once empty, as the warning asks: the mover ends, rather than trying to consume it again for ever.
    const again = new RecordingLogger();
    await startInstance(new Recorder(), 'b', serverOptions('hold'), again);
    await waitFor(
      () => again.count(new RegExp(`the queue "${suite.queue}" of this handler before partitions exists`)) === 1,
      'the old queue found',
      10_000,
    );
    await suite.broker.channel.deleteQueue(suite.queue);
    await waitFor(() => again.count(new RegExp(`"${suite.queue}" was deleted: nothing more to move`)) === 1, 'the mover ending', 10_000);
    expect(again.count(new RegExp(`Could not resume consuming "${suite.queue}"`))).toBe(0);
  });

  it('declares a deleted partition queue again and warns that the broker hashes most keys elsewhere from then on', async () => {
    const logger = new RecordingLogger();
    const recorder = new Recorder();
    const a = await startInstance(recorder, 'a', serverOptions('hold'), logger);
    await waitFor(() => ownedBy(a) === COUNT, 'every partition on the one server', 10_000);
    await suite.broker.channel.deleteQueue(`${suite.queue}.p1`);
    const warning = new RegExp(`"${suite.queue}.p1" was deleted and is declared again: .*most keys`);
    await waitFor(() => logger.count(warning) === 1, 'the warning', 15_000);
    await waitFor(async () => (await suite.broker.consumers(`${suite.queue}.p1`)) === 1, 'the partition consumed again', 10_000);
    await publish(client(), 'account.event', 8, 2);
    await waitFor(() => recorder.successes().length >= 16, 'every message handled', 10_000);
  });

  it("survives a server's dropped connection: the other takes its partitions, it takes a share again once back; in order, nothing lost", async () => {
    const proxy = await new TcpProxy().start();
    try {
      const recorder = new Recorder();
      const a = await startInstance(recorder, 'a', {
        ...serverOptions('hold'),
        url: proxy.url,
        reconnect: { initialDelay: '50ms', maxDelay: '200ms' },
      });
      const b = await startInstance(recorder, 'b', serverOptions('hold'));
      await waitFor(() => ownedBy(a) === 2 && ownedBy(b) === 2, 'two partitions on each server', 10_000);
      const KEYS = 20;
      const PER_KEY = 20;
      const publishing = publish(client(), 'account.event', KEYS, PER_KEY);
      await waitFor(() => recorder.successes().length > 50, 'a first part handled', 20_000);
      await proxy.cut();
      const cutAt = Date.now();
      const takenAt = await waitFor(() => ownedBy(b) === COUNT && Date.now(), 'the other server owning every partition', 10_000);
      await proxy.restore();
      await publishing;
      await waitFor(() => ownedBy(a) === 2 && ownedBy(b) === 2, 'two partitions on each server again', 15_000);
      const backAt = Date.now();
      await waitFor(() => new Set(recorder.successes().map((s) => `${s.key}/${s.seq}`)).size >= KEYS * PER_KEY, 'every message handled', 30_000);
      const successes = recorder.successes();
      const distinct = new Set(successes.map((s) => `${s.key}/${s.seq}`)).size;
      expect(distinct).toBe(KEYS * PER_KEY); // none lost
      // The cut loses the acks of what a handled last (and of what it was running): those run again on b. Only those.
      const first = new Map<string, Call>();
      for (const s of successes) if (!first.has(`${s.key}/${s.seq}`)) first.set(`${s.key}/${s.seq}`, s);
      const twice = successes.filter((s) => first.get(`${s.key}/${s.seq}`) !== s);
      expect(twice.every((s) => first.get(`${s.key}/${s.seq}`)!.app === 'a' && first.get(`${s.key}/${s.seq}`)!.at <= cutAt + 100)).toBe(true);
      expect(twice.length).toBeLessThanOrEqual(2 * 100); // a's two partitions' prefetch at most
      expect(outOfOrder([...first.values()])).toBe(0);
      console.log(
        `transport partitions (dropped connection): ${KEYS * PER_KEY} messages; b owned all ${takenAt - cutAt} ms after the cut, both two again ${backAt - cutAt} ms after; ` +
          `handled twice ${twice.length}`,
      );
    } finally {
      for (const { app } of apps.splice(0)) await app.close();
      await proxy.stop();
    }
  });

  it('fails at start without an exchange, naming partitions, exchange and the fix', () => {
    const { exchange: _unused, ...withoutExchange } = serverOptions('hold');
    void _unused;
    const failure = (() => {
      try {
        return new RetryServer(withoutExchange);
      } catch (error) {
        return error;
      }
    })();
    expect(failure).toBeInstanceOf(RetryConfigError);
    expect((failure as Error).message).toContain('RetryServer option "partitions" is given without "exchange"');
    expect((failure as Error).message).toContain(`add exchange, e.g. exchange: '${suite.queue}.in', and publish there`);
    expect(() => new RetryServer({ ...serverOptions('hold'), circuitBreaker: true })).toThrow(
      'RetryServer option "circuitBreaker" is given together with "partitions"',
    );
  });
});
