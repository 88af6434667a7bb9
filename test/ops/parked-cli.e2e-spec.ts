import { spawn, type ChildProcess } from 'node:child_process';
import type { ParkedMessageView } from 'nestjs-amqp-retry';
import amqp from 'amqplib';
import { REPLAY_WINDOW } from '../../libs/amqp-retry/src/ops/confirm.window.js';
import { HANDLER_REGISTRY_QUEUE } from '../../libs/amqp-retry/src/core/topology/handler-registry.record.js';
import { AMQP_URL, uniqueName, waitFor, type TestBroker } from '../support/broker.js';
import { buildCli } from '../support/cli.js';
import { useParkingShop } from '../support/parking-shop.js';
import { useSuite } from '../support/suite.js';

/** The bin as `npx --no-install amqp-retry` runs it: the workspace's link, to the committed launcher. */
const CLI = 'node_modules/.bin/amqp-retry';

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the built `amqp-retry` bin as a child process, stdin not a terminal. */
function cli(args: string[], env: Record<string, string> = {}): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, AMQP_URL, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin?.end();
  const done = new Promise<Run>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}
const run = (...args: string[]) => cli(args).done;

describe('the amqp-retry CLI, run as a child process', () => {
  const suite = useSuite('e2e.cli');
  const shop = useParkingShop(suite, 'e2e.cli.shop');
  const { start, park } = shop;
  let broker: TestBroker;
  let queue: string;
  let sibling: string;
  let errorQueue: string;

  // The bin is the compiled library, as users run it.
  beforeAll(() => buildCli(), 120_000);
  beforeEach(() => {
    ({ broker, queue } = suite);
    ({ sibling, errorQueue } = shop);
  });

  it('lists with counts and filters, shows one, and exits 3 when nothing matches', async () => {
    await start();
    await park([{ n: 1, error: 'card declined' }, { n: 2, error: 'timeout' }, Buffer.from('not json')]);

    const listed = await run('parked', 'list', '--queue', queue, '--json');
    expect(listed.code).toBe(0);
    const { summary, total, items } = JSON.parse(listed.stdout) as { summary: { total: number }; total: number; items: ParkedMessageView[] };
    expect([summary.total, total, items.length]).toEqual([3, 3, 3]);

    const human = await run('parked', 'list', '--queue', queue, '--error', 'card');
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^1 parked\nBy reason:\n +1 {2}non-retryable\nBy error:\n +1 {2}card declined\n/);
    expect(human.stdout).toContain('card declined');
    expect(human.stdout).not.toContain('timeout');
    expect(human.stdout).not.toMatch(/\[[=\-░█]/); // no progress bar when not a terminal

    expect((await run('parked', 'list', '--queue', queue, '--reason', 'exhausted')).code).toBe(3);
    // --error-queue names the parking queue itself, as in replay and purge; a mistyped one is a usage error.
    const byParkingQueue = await run('parked', 'list', '--error-queue', errorQueue, '--error', 'timeout', '--json');
    expect({ code: byParkingQueue.code, stderr: byParkingQueue.stderr }).toEqual({ code: 0, stderr: '' });
    const readByParkingQueue = JSON.parse(byParkingQueue.stdout) as { total: number; items: ParkedMessageView[] };
    expect(readByParkingQueue.items.map((item) => [item.errorQueue, item.error])).toEqual([[errorQueue, 'timeout']]);
    expect((await run('parked', 'list', '--error-queue', errorQueue, '--queue', queue, '--json')).code).toBe(0);
    const unknownParkingQueue = await run('parked', 'list', '--error-queue', `${errorQueue}x`);
    expect({ code: unknownParkingQueue.code, stdout: unknownParkingQueue.stdout }).toEqual({ code: 2, stdout: '' });
    expect(unknownParkingQueue.stderr).toContain(`"${errorQueue}x" is not a queue of what this command looks at`);
    // A mistyped queue is not an empty selection: it says so, names the queues there are and how to list them.
    const typo = await run('parked', 'list', '--queue', `${queue}x`);
    expect(typo.code).toBe(2);
    expect(typo.stdout).toBe('');
    expect(typo.stderr).toContain(`--queue is "${queue}x", which is not a handler queue on this broker`);
    expect(typo.stderr).toContain('amqp-retry parked queues --app <name> (or --whole-vhost)');
    expect((await run('parked', 'replay', '--queue', `${queue}x`, '--all')).code).toBe(2);

    const shown = await run('parked', 'show', items[2].id, '--queue', queue, '--json');
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: items[2].id, reason: 'malformed', body: 'not json' });
    expect((await run('parked', 'show', 'no-such-id', '--queue', queue)).code).toBe(3);
    expect((await run('parked', 'list', '--since', 'yesterday')).code).toBe(2);
    expect(await broker.count(errorQueue)).toBe(3);
  });

  it('replays the selection to its queue only, with a dry run first, and wants a selection', async () => {
    const handler = await start();
    await park([
      { n: 1, error: 'card declined' },
      { n: 2, error: 'timeout' },
      { n: 3, error: 'card declined' },
    ]);
    shop.failing = false;
    const calls = handler.calls.length;

    const dry = await run('parked', 'replay', '--queue', queue, '--error', 'card', '--dry-run', '--json');
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual({ matched: 2, replayed: 0, failed: [], dryRun: true });
    expect(await broker.count(errorQueue)).toBe(3);

    const everything = await run('parked', 'replay', '--queue', queue);
    expect(everything.code).toBe(2);
    expect(everything.stderr).toContain('--all');

    const replayed = await run('parked', 'replay', '--queue', queue, '--error', 'card');
    expect(replayed.code).toBe(0);
    expect(replayed.stdout).toContain('Replayed 2 of 2');
    await waitFor(() => handler.calls.length === calls + 2, 'the replayed calls');
    expect(handler.calls.slice(calls).map((c) => c.attempt)).toEqual([1, 1]);
    expect(await broker.count(sibling)).toBe(0);
    expect(await broker.count(errorQueue)).toBe(1);
    expect((await run('parked', 'replay', '--queue', queue, '--error', 'card')).code).toBe(3);
  });

  it('refuses to purge without --yes when stdin is not a terminal, then purges only the matching ones', async () => {
    await start();
    await park([{ n: 1, error: 'card declined' }, Buffer.from('bad'), Buffer.from('worse')]);
    const refused = await run('parked', 'purge', '--queue', queue, '--reason', 'malformed');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--yes');
    expect(await broker.count(errorQueue)).toBe(3);

    const purged = await run('parked', 'purge', '--queue', queue, '--reason', 'malformed', '--yes', '--json');
    expect(purged.code).toBe(0);
    expect(JSON.parse(purged.stdout)).toEqual({ matched: 2, purged: 2, dryRun: false });
    expect(await broker.count(errorQueue)).toBe(1);
  });

  it("reads a copy parked without x-original-queue in its queue's own parking queue as that queue's: list, replay and purge agree", async () => {
    // No handler runs and none recorded the queue: the queue named and its `<queue>.error` are all there is.
    const own = suite.retryQueue(uniqueName('e2e.cli.legacy'));
    await broker.declareQueue(own);
    await broker.declareQueue(`${own}.error`);
    await broker.publish(
      '',
      `${own}.error`,
      { n: 1 },
      { headers: { 'x-parked-id': 'legacy-1', 'x-original-queue': own, 'x-parked-reason': 'exhausted' } },
    );
    for (const n of [2, 3]) await broker.publish('', `${own}.error`, { n }, { headers: { 'x-parked-reason': 'exhausted' } }); // an older version's

    const listed = await run('parked', 'list', '--queue', own, '--json');
    const { total, items } = JSON.parse(listed.stdout) as { total: number; items: ParkedMessageView[] };
    expect([listed.code, total, items.map((item) => item.queue)]).toEqual([0, 3, [own, own, own]]);

    const replayed = await run('parked', 'replay', '--queue', own, '--text', '"n":2');
    expect({ code: replayed.code, stdout: replayed.stdout.trim(), stderr: replayed.stderr }).toEqual({
      code: 0,
      stdout: `Replayed 1 of 1 matching message(s) from "${own}.error".`,
      stderr: '',
    });
    expect((await broker.take(own, 1)).map((m) => m.content.toString())).toEqual(['{"n":2}']);

    const purged = await run('parked', 'purge', '--queue', own, '--all', '--yes', '--json');
    expect({ code: purged.code, result: JSON.parse(purged.stdout) as unknown, stderr: purged.stderr }).toEqual({
      code: 0,
      result: { matched: 2, purged: 2, dryRun: false },
      stderr: '',
    });
    expect(await broker.count(`${own}.error`)).toBe(0);
  });

  it('says which copies without x-original-queue a --queue purge or replay left in a parking queue shared by several queues', async () => {
    const first = suite.retryQueue(uniqueName('e2e.cli.shared-a'));
    const second = suite.retryQueue(uniqueName('e2e.cli.shared-b'));
    const shared = uniqueName('e2e.cli.shared-dlq');
    suite.extraQueues.push(shared);
    await broker.channel.assertQueue(HANDLER_REGISTRY_QUEUE, { durable: true });
    for (const queue of [first, second]) {
      await broker.declareQueue(queue);
      await broker.publish('', HANDLER_REGISTRY_QUEUE, {
        queue,
        errorQueue: shared,
        tiers: [],
        queueType: 'classic',
        applications: [],
        recordedAt: new Date().toISOString(),
      });
    }
    await broker.declareQueue(shared);
    await broker.publish('', shared, { n: 1 }, { headers: { 'x-parked-id': 'shared-1', 'x-original-queue': first, 'x-parked-reason': 'exhausted' } });
    await broker.publish(
      '',
      shared,
      { n: 2 },
      { headers: { 'x-parked-id': 'shared-2', 'x-original-queue': second, 'x-parked-reason': 'exhausted' } },
    );
    await broker.publish('', shared, { n: 3 }, { headers: { 'x-parked-reason': 'exhausted' } }); // whose? no name says

    const dry = await run('parked', 'replay', '--whole-vhost', '--queue', first, '--all', '--dry-run');
    expect(dry.stdout.trim()).toBe(`Would replay 1 message(s) from "${shared}" (dry run).`);
    expect(dry.stderr).toContain(`1 other matching message(s) in "${shared}" name no queue they failed in`);
    const purged = await run('parked', 'purge', '--whole-vhost', '--queue', first, '--all', '--yes');
    expect(purged.code).toBe(0);
    expect(purged.stdout.trim()).toBe(`Purged 1 message(s) from "${shared}".`);
    expect(purged.stderr.trim()).toBe(
      `1 other matching message(s) in "${shared}" name no queue they failed in (parked without x-original-queue) and were not purged; ` +
        `to purge them, select them by --id with --error-queue "${shared}" and no --queue.`,
    );
    expect(await broker.count(shared)).toBe(2);
  });

  it('with --queue and an --error-queue no handler records, acts on the copies parked from that queue only: business messages there stay', async () => {
    const { calls } = await start();
    // A plain queue of the business, named as a parking queue by mistake: two messages of its own, a copy the library
    // parked from the handler queue, and one parked from a queue this command does not name.
    const invoices = uniqueName('e2e.cli.invoices');
    suite.extraQueues.push(invoices);
    await broker.declareQueue(invoices);
    for (const n of [1, 2]) await broker.publish('', invoices, { invoice: n }, { messageId: `invoice-${n}` });
    const parked = { 'x-parked-reason': 'exhausted', 'x-parked-id': 'pair-1', 'x-original-queue': queue };
    await broker.publish('', invoices, { n: 3 }, { headers: parked });
    const other = uniqueName('e2e.cli.other');
    await broker.publish('', invoices, { n: 4 }, { headers: { ...parked, 'x-parked-id': 'pair-other', 'x-original-queue': other } });
    shop.failing = false;
    const before = calls.length;

    const listed = await run('parked', 'list', '--queue', queue, '--error-queue', invoices, '--json');
    expect((JSON.parse(listed.stdout) as { items: ParkedMessageView[] }).items.map((item) => item.id)).toEqual(['pair-1']);
    // An export keeps to the queue named, as list, replay and purge do.
    const exported = await run('parked', 'export', '--queue', queue, '--error-queue', invoices);
    expect({
      code: exported.code,
      ids: exported.stdout
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as ParkedMessageView).id),
    }).toEqual({
      code: 0,
      ids: ['pair-1'],
    });
    const dry = await run('parked', 'purge', '--queue', queue, '--error-queue', invoices, '--all', '--dry-run');
    expect(dry.stdout.trim()).toBe(`Would purge 1 message(s) from "${invoices}" (dry run).`);

    const replayed = await run('parked', 'replay', '--queue', queue, '--error-queue', invoices, '--all');
    expect({ code: replayed.code, stdout: replayed.stdout.trim() }).toEqual({
      code: 0,
      stdout: `Replayed 1 of 1 matching message(s) from "${invoices}".`,
    });
    expect(replayed.stderr).toContain(
      `2 other matching message(s) in "${invoices}" were not parked by amqp-retry (no x-parked-reason header) and were left as they are`,
    );
    expect(replayed.stderr).toContain(`1 other matching message(s) in "${invoices}" name a queue no replay goes to`);
    expect(replayed.stderr).toContain('pair-other');
    await waitFor(() => calls.length === before + 1, 'the one replayed');
    expect(calls.slice(before).map((call) => call.payload)).toEqual([{ n: 3 }]);
    const left = await broker.take(invoices, 3);
    expect(left.map((m) => m.properties.messageId ?? m.properties.headers?.['x-parked-id'])).toEqual(['invoice-1', 'invoice-2', 'pair-other']);
  });

  it('refuses, as a parking queue, a handler queue or a queue with consumers, and reads or changes nothing', async () => {
    await start();
    await park([{ n: 1, error: 'card declined' }]);
    const handlerQueue = await run('parked', 'purge', '--error-queue', queue, '--all', '--yes');
    expect(handlerQueue.code).toBe(2);
    // The CLI runs no handler: the queue's record says it is a handler queue, and the refusal names the record.
    expect(handlerQueue.stderr).toContain(`"${queue}" is the handler queue by the record of "${queue}" in "amqp-retry.handlers" (`);
    expect(handlerQueue.stderr).toContain(', not a parking queue; nothing was read or changed');
    const paired = await run('parked', 'purge', '--queue', queue, '--error-queue', queue, '--all', '--yes');
    expect(paired.code).toBe(2);
    // A live queue no handler recorded: its consumer would lose its messages to a walk, and to a purge for good.
    const connection = await amqp.connect(AMQP_URL);
    try {
      const live = await connection.createChannel();
      await live.prefetch(1);
      await live.consume(sibling, () => undefined);
      await broker.publish('', sibling, { n: 2 });
      for (const command of [['list'], ['purge', '--all', '--yes']]) {
        const refused = await run('parked', ...command, '--error-queue', sibling);
        expect(refused.code).toBe(2);
        expect(refused.stderr).toContain(`"${sibling}" is a queue with 1 consumer(s), not a parking queue`);
      }
    } finally {
      await connection.close(); // the unacked message goes back to the queue
    }
    await waitFor(async () => (await broker.count(sibling)) === 1, 'the message back in the queue');
    expect(await broker.count(errorQueue)).toBe(1);
  });

  it("refuses, as a parking queue named with no --app, the library's own queues and a queue holding messages it did not park", async () => {
    await start();
    // Named by the name alone (whole vhost): the registry, the ladder's levels, plan records and dead-letter queues are
    // never parking queues. The vhost's shared ones are tried by dry runs, which change nothing should the check fail.
    const dryRuns = [
      ['purge', '--all', '--dry-run'],
      ['replay', '--whole-vhost', '--all', '--dry-run'],
    ];
    const changes = [['purge', '--all', '--yes'], ['replay', '--all'], ...dryRuns];
    const own: [string, string, string[][]][] = [
      ['amqp-retry.handlers', 'the handler registry', dryRuns],
      ['amqp-retry.delay.v1.p03.1536ms', 'a queue of a delay ladder', dryRuns],
      [`${queue}.retry.plan`, `a name the retry topology of "${queue}" derives`, changes],
      [`${queue}.dlx.dead`, `a name the retry topology of "${queue}" derives`, changes],
    ];
    for (const [name, role, commands] of own) {
      for (const command of commands) {
        const refused = await run('parked', ...command, '--error-queue', name);
        expect({ name, command, code: refused.code, stdout: refused.stdout }).toEqual({ name, command, code: 2, stdout: '' });
        expect(refused.stderr).toContain(`"${name}" is ${role}`);
      }
    }
    expect(await broker.count(`${queue}.retry.plan`)).toBe(1);
    // A queue no handler records as a parking queue, holding a message the library did not park: a change is refused
    // (its dry run too), reading it still works.
    await broker.publish('', sibling, { n: 1 });
    for (const command of [
      ['purge', '--all', '--yes'],
      ['replay', '--all'],
      ['purge', '--all', '--dry-run'],
    ]) {
      const refused = await run('parked', ...command, '--error-queue', sibling);
      expect({ command, code: refused.code, stdout: refused.stdout }).toEqual({ command, code: 2, stdout: '' });
      expect(refused.stderr).toContain(`"${sibling}" is a queue no handler records as its parking queue, holding a message amqp-retry did not park`);
    }
    expect((await run('parked', 'list', '--error-queue', sibling, '--json')).code).toBe(0);
    expect(await broker.count(sibling)).toBe(1);
    // One that holds only copies the library parked (its handler's record gone) may be purged.
    const orphan = uniqueName(`${queue}.orphan`);
    suite.extraQueues.push(orphan);
    await broker.declareQueue(orphan);
    await broker.publish('', orphan, { n: 2 }, { headers: { 'x-parked-reason': 'exhausted', 'x-original-queue': queue } });
    const purged = await run('parked', 'purge', '--error-queue', orphan, '--all', '--yes');
    expect({ code: purged.code, stdout: purged.stdout.trim() }).toEqual({ code: 0, stdout: `Purged 1 message(s) from "${orphan}".` });
  });

  it('replays past a message whose x-original-queue no queue name can be, leaving it parked and named, duplicating nothing', async () => {
    const { calls } = await start();
    await park([
      { n: 1, error: 'e' },
      { n: 2, error: 'e' },
      { n: 3, error: 'e' },
    ]);
    const long = 'q'.repeat(300);
    const headers = { 'x-parked-reason': 'exhausted', 'x-parked-id': 'too-long-1', 'x-original-queue': long };
    await broker.publish('', errorQueue, { n: 4 }, { headers, persistent: true });
    await park([{ n: 5, error: 'e' }], 5);
    shop.failing = false;
    const before = calls.length;
    for (let run = 1; run <= 2; run++) {
      const replayed = await cli(['parked', 'replay', '--error-queue', errorQueue, '--all']).done;
      expect({ run, code: replayed.code, stdout: replayed.stdout.trim() }).toEqual({
        run,
        code: 4,
        stdout: `Replayed ${run === 1 ? 4 : 0} of ${run === 1 ? 5 : 1} matching message(s) from "${errorQueue}".`,
      });
      expect(replayed.stderr).toContain('Left parked too-long-1: the queue it failed in (x-original-queue) is 300 bytes long');
      expect(replayed.stderr).toContain('export it by its id to keep it, then purge it by its id');
    }
    await waitFor(() => calls.length >= before + 4, 'the four replayed');
    expect(calls.slice(before).map((call) => (call.payload as { n: number }).n)).toEqual([1, 2, 3, 5]);
    expect(await broker.count(errorQueue)).toBe(1);
  });

  it('exports the matching messages as JSON lines and leaves them parked', async () => {
    await start();
    await park([
      { n: 1, error: 'card declined' },
      { n: 2, error: 'timeout' },
      { n: 3, error: 'card declined' },
    ]);
    const exported = await run('parked', 'export', '--queue', queue, '--error', 'card');
    expect(exported.code).toBe(0);
    const lines = exported.stdout.trimEnd().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as ParkedMessageView).body)).toEqual([
      '{"n":1,"error":"card declined"}',
      '{"n":3,"error":"card declined"}',
    ]);
    expect(await broker.count(errorQueue)).toBe(3);
  });

  it('exports and prints as --json the bodies as they are, credentials-like text included', async () => {
    await start();
    const body = { n: 1, error: 'bad', dsn: 'amqp://admin:s3cret@db', query: 'token=abc&password=x', mail: 'mailto:x@y', key: 'dXNlcjpwYXNz@host' };
    await park([body]);
    const whole = JSON.stringify(body);
    const exported = await run('parked', 'export', '--queue', queue);
    expect(exported.code).toBe(0);
    expect((JSON.parse(exported.stdout) as ParkedMessageView).body).toBe(whole);
    const listed = await run('parked', 'list', '--queue', queue, '--json');
    expect((JSON.parse(listed.stdout) as { items: ParkedMessageView[] }).items.map((item) => item.body)).toEqual([whole]);
    const [{ id }] = (JSON.parse(listed.stdout) as { items: ParkedMessageView[] }).items;
    const shown = await run('parked', 'show', id, '--queue', queue, '--json');
    expect((JSON.parse(shown.stdout) as ParkedMessageView).body).toBe(whole);
  });

  it('ends quietly, exit 0, when the reader of an export stops reading (| head -1), and leaves every message parked', async () => {
    await start();
    const body = { text: 'x'.repeat(1000) };
    for (let n = 0; n < 300; n++) {
      await broker.publish(
        '',
        errorQueue,
        { ...body, n },
        { headers: { 'x-parked-reason': 'exhausted', 'x-parked-id': `p-${n}`, 'x-original-queue': queue } },
      );
    }
    // 300 lines of about 1.4 kB: more than a pipe holds, so that writes go on after the reader has gone.
    const { child, done } = cli(['parked', 'export', '--error-queue', errorQueue]);
    child.stdout?.once('data', () => child.stdout?.destroy());
    const exported = await done;
    expect({ code: exported.code, signal: exported.signal, stderr: exported.stderr }).toEqual({ code: 0, signal: null, stderr: '' });
    await waitFor(async () => (await broker.count(errorQueue)) === 300, 'every message given back');
  });

  it('never prints the password of the URL', async () => {
    const url = new URL(AMQP_URL); // the broker under test, with a wrong password
    url.password = 's3cr3t-pw';
    const wrong = await cli(['--url', url.toString(), 'parked', 'list', '--whole-vhost']).done;
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(url.toString().replace(':s3cr3t-pw@', ':***@'));
    expect(wrong.stdout + wrong.stderr).not.toContain('s3cr3t-pw');
    const refused = await cli(['parked', 'list', '--whole-vhost'], { AMQP_URL: 'amqp://guest:s3cr3t-pw@127.0.0.1:1' }).done;
    expect(refused.code).toBe(1);
    expect(refused.stdout + refused.stderr).not.toContain('s3cr3t-pw');
  });

  it('loses nothing when killed with SIGKILL in the middle of a replay, and duplicates at most the copies awaiting a confirm', async () => {
    const N = 5000;
    await broker.channel.assertQueue(queue, { durable: true });
    await broker.channel.assertQueue(errorQueue, { durable: true });
    for (let n = 0; n < N; n++) {
      broker.channel.publish('', errorQueue, Buffer.from(JSON.stringify({ n })), {
        persistent: true,
        headers: { 'x-parked-id': `kill-${n}`, 'x-original-queue': queue, 'x-parked-reason': 'exhausted' },
      });
    }
    await (broker.channel as import('amqplib').ConfirmChannel).waitForConfirms();

    const { child, done } = cli(['parked', 'replay', '--queue', queue, '--error-queue', errorQueue, '--all']);
    await waitFor(async () => ((await broker.count(queue)) ?? 0) >= N / 20, 'the replay under way', 30_000);
    child.kill('SIGKILL');
    const killed = await done;
    expect(killed.signal).toBe('SIGKILL');

    // The killed connection's unacked messages go back to the parking queue.
    await waitFor(async () => ((await broker.count(queue)) ?? 0) + ((await broker.count(errorQueue)) ?? 0) >= N, 'every message back in a queue');
    const replayed = (await broker.drain(queue)).map((m) => (JSON.parse(m.content.toString()) as { n: number }).n);
    const stillParked = await broker.drain(errorQueue);
    const parkedNs = stillParked.map((m) => (JSON.parse(m.content.toString()) as { n: number }).n);
    const seen = new Set([...replayed, ...parkedNs]);
    const duplicates = replayed.length + parkedNs.length - seen.size;
    console.log(`SIGKILL mid-replay: ${replayed.length} replayed, ${parkedNs.length} still parked, ${N - seen.size} lost, ${duplicates} duplicated`);
    expect(seen.size).toBe(N); // nothing lost
    expect(replayed.length).toBeGreaterThan(0);
    expect(parkedNs.length).toBeGreaterThan(0); // killed mid-way
    expect(duplicates).toBeLessThanOrEqual(REPLAY_WINDOW); // at most the copies awaiting their confirm
    expect(new Set(replayed).size).toBe(replayed.length); // no message replayed twice
  }, 120_000);
});
