import type { INestApplication, INestApplicationContext } from '@nestjs/common';
import {
  NonRetryableError,
  ParkedMessages,
  ParkedScopeError,
  type HandlerQueueState,
  type ParkedMessageView,
  type ReplayResult,
} from 'nestjs-amqp-retry';
import { HANDLER_REGISTRY_QUEUE } from '../../libs/amqp-retry/src/core/topology/handler-registry.record.js';
import { runCli } from '../../libs/amqp-retry/src/ops/cli/cli.program.js';
import type { CliIo } from '../../libs/amqp-retry/src/ops/cli/parked.commands.js';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, uniqueName, waitFor, type TestBroker } from '../support/broker.js';
import { BearerGuard, OPERATOR_AUTHORIZATION, startDashboardApp } from '../support/dashboard-app.js';
import { useSuite } from '../support/suite.js';

const TOKEN_HEADER = 'x-retry-dashboard-token';
const tokenOf = (html: string) => /name="retry-dashboard-token" content="([^"]+)"/.exec(html)?.[1] ?? '';

/** Runs the CLI in this process against the test broker, its output kept. */
async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    out: (text) => void out.push(text),
    err: (text) => void err.push(text),
    stdinIsTTY: false,
    stderrIsTTY: false,
    confirm: async () => false,
    progress: () => undefined,
  };
  const code = await runCli(['--url', AMQP_URL, ...args], io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/**
 * Two applications on one vhost, A with the parked-messages page, B without: A's page, A's ParkedMessages and a CLI
 * scoped to A never reach B's parked messages, whatever names are typed in; the whole-vhost options do.
 */
describe("the parked-messages page, ParkedMessages and the CLI see one application's queues", () => {
  // The applications, queues and parked messages are the file's: every test looks at the same two applications.
  const suite = useSuite('e2e.scope.a', { perFile: true });
  let broker: TestBroker;
  let appA: INestApplication;
  let urlA: string;
  let appB: INestApplicationContext;
  let queueA: string;
  const queueB = uniqueName('e2e.scope.b');
  const errorB = `${queueB}.parked`; // a parking queue of its own name: nothing to guess from A's
  const nameB = uniqueName('billing-service');
  const HandlerB = handlerFor({ queue: queueB, errorQueue: errorB, delays: [100] }, () => {
    throw new NonRetryableError('b: secret ledger entry refused');
  });
  let idB: string;
  let callsB = 0;

  const asOperator = { authorization: OPERATOR_AUTHORIZATION };
  const get = (url: string, path: string) => fetch(`${url}/retry/api/${path}`, { headers: asOperator });
  async function post(url: string, path: string, body: unknown): Promise<Response> {
    const token = tokenOf(await (await fetch(`${url}/retry`, { headers: asOperator })).text());
    return fetch(`${url}/retry/api/${path}`, {
      method: 'POST',
      headers: { ...asOperator, 'content-type': 'application/json', [TOKEN_HEADER]: token },
      body: JSON.stringify(body),
    });
  }

  beforeAll(async () => {
    ({ broker, queue: queueA } = suite);
    suite.retryQueue(queueB);
    suite.extraQueues.push(errorB);
    const HandlerA = handlerFor({ queue: queueA, delays: [100] }, () => {
      throw new NonRetryableError('a: card expired');
    });
    appB = await startApp([HandlerB], { ...TEST_OPTIONS, application: nameB });
    suite.apps.push(appB);
    ({ app: appA, url: urlA } = await startDashboardApp([HandlerA], { path: '/retry', guard: BearerGuard }));
    suite.app = appA;
    await broker.publish('', queueA, { from: 'a' });
    await broker.publish('', queueB, { from: 'b', ledger: 'private' });
    await waitFor(async () => (await broker.count(`${queueA}.error`)) === 1 && (await broker.count(errorB)) === 1, 'one message parked by each');
    callsB = handlerOf(appB, HandlerB).calls.length;
    const operator = await ParkedMessages.connect({ url: AMQP_URL, wholeVhost: true });
    try {
      idB = (await operator.list({ queue: queueB })).items[0].id;
    } finally {
      await operator.close();
    }
  }, 60_000);

  /** B's parked message is still there, untouched, and B's handler was not called again. */
  async function expectBUntouched(): Promise<void> {
    expect(await broker.count(errorB)).toBe(1);
    expect(await broker.count(queueB)).toBe(0);
    expect(handlerOf(appB, HandlerB).calls.length).toBe(callsB);
  }

  it("A's page lists A's queues and messages only", async () => {
    const queues = (await (await get(urlA, 'queues')).json()) as HandlerQueueState[];
    expect(queues.map((q) => q.queue)).toEqual([queueA]);
    const page = (await (await get(urlA, 'messages')).json()) as { total: number; items: ParkedMessageView[] };
    expect(page.total).toBe(1);
    expect(page.items.map((v) => [v.queue, v.errorQueue])).toEqual([[queueA, `${queueA}.error`]]);
    const summary = (await (await get(urlA, 'summary')).json()) as { total: number };
    expect(summary.total).toBe(1);
  });

  it("A's page refuses every call that types in B's names: list, summary, show, replay, edit, purge, export", async () => {
    const refusals: [string, Response][] = [
      ['list', await get(urlA, `messages?queue=${encodeURIComponent(queueB)}`)],
      ['summary', await get(urlA, `summary?queue=${encodeURIComponent(queueB)}`)],
      ['show', await get(urlA, `messages/${encodeURIComponent(errorB)}/${encodeURIComponent(idB)}`)],
      ['replay', await post(urlA, 'replay', { errorQueue: errorB, ids: [idB] })],
      ['replay all', await post(urlA, 'replay', { errorQueue: errorB, filter: { queue: queueB } })],
      ['edit', await post(urlA, 'edit-and-replay', { errorQueue: errorB, id: idB, body: '{"forged":true}' })],
      ['purge', await post(urlA, 'purge', { errorQueue: errorB, ids: [idB] })],
      ['export', await get(urlA, `export?errorQueue=${encodeURIComponent(errorB)}`)],
    ];
    for (const [what, response] of refusals) {
      const text = await response.text();
      expect([what, response.status]).toEqual([what, 400]);
      expect(text).not.toContain('ledger'); // nothing of B's message leaks into the refusal
      expect(text).not.toContain('secret');
    }
    await expectBUntouched();
  });

  it('a page with wholeVhost sees and acts on every application’s parked messages', async () => {
    const operators = await startDashboardApp([], { path: '/retry', guard: BearerGuard, wholeVhost: true });
    try {
      const queues = (await (await get(operators.url, 'queues')).json()) as HandlerQueueState[];
      expect(queues.map((q) => q.queue)).toEqual(expect.arrayContaining([queueA, queueB]));
      const shown = (await (
        await get(operators.url, `messages/${encodeURIComponent(errorB)}/${encodeURIComponent(idB)}`)
      ).json()) as ParkedMessageView;
      expect(shown).toMatchObject({ id: idB, queue: queueB, error: 'b: secret ledger entry refused' });
      const replay = await post(operators.url, 'replay', { errorQueue: errorB, ids: [idB] });
      expect([replay.status, await replay.json()]).toEqual([200, { matched: 1, replayed: 1, failed: [], dryRun: false }]);
      // B's handler runs it again and parks it again (it always refuses).
      await waitFor(() => handlerOf(appB, HandlerB).calls.length === callsB + 1, "B's handler called by the replay");
      await waitFor(async () => (await broker.count(errorB)) === 1, 'parked again');
    } finally {
      await operators.app.close();
    }
    callsB = handlerOf(appB, HandlerB).calls.length;
    const operator = await ParkedMessages.connect({ url: AMQP_URL, wholeVhost: true });
    try {
      idB = (await operator.list({ queue: queueB })).items[0].id;
    } finally {
      await operator.close();
    }
  });

  it('the ParkedMessages an application injects is its own; connect() sees what it names, and needs a name', async () => {
    const own = appA.get(ParkedMessages);
    expect((await own.queues()).map((q) => q.queue)).toEqual([queueA]);
    await expect(own.show(errorB, idB)).rejects.toThrow(ParkedScopeError);
    await expect(own.list({ queue: queueB })).rejects.toThrow(ParkedScopeError);
    await expect(own.purge({ errorQueue: errorB, ids: [idB] })).rejects.toThrow(ParkedScopeError);
    await expect(own.replay({ errorQueue: errorB })).rejects.toThrow(ParkedScopeError);
    await expect(
      (async () => {
        for await (const line of own.export({ errorQueue: errorB })) void line;
      })(),
    ).rejects.toThrow(ParkedScopeError);
    expect((await own.wholeVhost().queues()).map((q) => q.queue)).toEqual(expect.arrayContaining([queueA, queueB]));

    const unnamed = await ParkedMessages.connect({ url: AMQP_URL });
    const byApplication = await ParkedMessages.connect({ url: AMQP_URL, application: nameB });
    try {
      await expect(unnamed.queues()).rejects.toThrow(/no scope: name the handler queues \(queues\), an application \(application.*wholeVhost: true/);
      expect((await byApplication.queues()).map((q) => [q.queue, q.errorQueue, q.parked])).toEqual([[queueB, errorB, 1]]);
      expect((await byApplication.list()).items.map((v) => v.id)).toEqual([idB]);
      await expect(byApplication.list({ queue: queueA })).rejects.toThrow(ParkedScopeError);
    } finally {
      await unnamed.close();
      await byApplication.close();
    }
    await expectBUntouched();
  });

  it('the CLI looks at the queues or the application named, never at everything by default', async () => {
    const bare = await cli('parked', 'list');
    expect(bare.code).toBe(2);
    expect(bare.err).toMatch(/--app <name>.*--queue <queue>.*--whole-vhost/);

    const listed = await cli('parked', 'list', '--app', nameB, '--json');
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.out) as { items: ParkedMessageView[] }).items.map((v) => v.id)).toEqual([idB]);
    const queues = await cli('parked', 'queues', '--app', nameB, '--json');
    expect((JSON.parse(queues.out) as HandlerQueueState[]).map((q) => q.queue)).toEqual([queueB]);

    // A queue or a parking queue of another application, typed in beside --app: refused, nothing changed.
    for (const args of [
      ['list', '--app', nameB, '--queue', queueA],
      ['replay', '--app', nameB, '--queue', queueA, '--all'],
      ['purge', '--app', nameB, '--error-queue', `${queueA}.error`, '--all', '--yes'],
      ['export', '--app', nameB, '--error-queue', `${queueA}.error`],
    ]) {
      const refused = await cli('parked', ...args);
      expect([args.join(' '), refused.code]).toEqual([args.join(' '), 2]);
      expect(refused.err).toContain('--whole-vhost');
    }
    expect(await broker.count(`${queueA}.error`)).toBe(1);

    const everything = await cli('parked', 'queues', '--whole-vhost', '--json');
    expect((JSON.parse(everything.out) as HandlerQueueState[]).map((q) => q.queue)).toEqual(expect.arrayContaining([queueA, queueB]));
    const named = await cli('parked', 'list', '--queue', queueA, '--json');
    expect((JSON.parse(named.out) as { total: number }).total).toBe(1);
    await expectBUntouched();
  });

  it('records written before applications were recorded stay readable: by name and for the whole vhost', async () => {
    const old = uniqueName('e2e.scope.old');
    await broker.channel.assertQueue(HANDLER_REGISTRY_QUEUE, { durable: true });
    await broker.declareQueue(`${old}.error`);
    await broker.publish('', `${old}.error`, { from: 'old' }, { headers: { 'x-original-queue': old, 'x-parked-reason': 'exhausted' } });
    // The record an older version wrote: no applications field.
    await broker.publish('', HANDLER_REGISTRY_QUEUE, {
      queue: old,
      errorQueue: `${old}.error`,
      tiers: [],
      queueType: 'classic',
      recordedAt: '2025-01-01T00:00:00.000Z',
    });
    try {
      const everything = await cli('parked', 'queues', '--whole-vhost', '--json');
      expect((JSON.parse(everything.out) as HandlerQueueState[]).find((q) => q.queue === old)).toMatchObject({
        errorQueue: `${old}.error`,
        parked: 1,
      });
      const byName = await cli('parked', 'list', '--queue', old, '--json');
      expect((JSON.parse(byName.out) as { total: number }).total).toBe(1);
      const byApplication = await cli('parked', 'queues', '--app', nameB, '--json');
      expect((JSON.parse(byApplication.out) as HandlerQueueState[]).map((q) => q.queue)).toEqual([queueB]);
    } finally {
      await broker.deleteRetryTopology(old);
    }
  });
  it("A's page never replays a copy whose x-original-queue names a queue out of its scope or a queue of the library, and lists it under no queue", async () => {
    const victim = uniqueName('e2e.scope.victim');
    suite.extraQueues.push(victim);
    await broker.declareQueue(victim);
    const [{ tiers }] = (await (await get(urlA, 'queues')).json()) as HandlerQueueState[];
    const forged = (id: string, queue: string) => ({
      headers: { 'x-parked-reason': 'exhausted', 'x-parked-id': id, 'x-original-queue': queue, 'x-exception-message': 'forged' },
    });
    await broker.publish('', `${queueA}.error`, { forged: 'victim' }, forged('forged-victim', victim));
    await broker.publish('', `${queueA}.error`, { forged: 'tier' }, forged('forged-tier', tiers[0].queue));
    try {
      const page = (await (await get(urlA, 'messages?error=forged')).json()) as { items: ParkedMessageView[] };
      expect(page.items.map((v) => [v.id, v.queue, v.unreplayable])).toEqual([
        [
          'forged-victim',
          '',
          `its queue "${victim}" (x-original-queue) is not a handler queue this view looks after; no replay goes there (should it be one whose record is gone, name it as the handler queue: the CLI's --queue)`,
        ],
        ['forged-tier', '', expect.stringContaining(`its queue "${tiers[0].queue}" (x-original-queue) is a retry tier`)],
      ]);
      const replay = await post(urlA, 'replay', { errorQueue: `${queueA}.error`, filter: { error: 'forged' } });
      const result = (await replay.json()) as ReplayResult;
      expect([replay.status, result.matched, result.replayed, result.failed.map((f) => [f.id, f.error])]).toEqual([
        200,
        2,
        0,
        page.items.map((v) => [v.id, v.unreplayable]),
      ]);
      const edit = await post(urlA, 'edit-and-replay', { errorQueue: `${queueA}.error`, id: 'forged-victim', body: '{}' });
      expect(((await edit.json()) as ReplayResult).replayed).toBe(0);
      expect(await broker.count(victim)).toBe(0);
      expect(await broker.count(tiers[0].queue)).toBe(0);
      expect(await broker.count(`${queueA}.error`)).toBe(3);
    } finally {
      await post(urlA, 'purge', { errorQueue: `${queueA}.error`, ids: ['forged-victim', 'forged-tier'] });
    }
    expect(await broker.count(`${queueA}.error`)).toBe(1);
  });
});
