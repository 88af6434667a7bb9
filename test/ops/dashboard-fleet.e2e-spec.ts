import { NonRetryableError } from 'nestjs-amqp-retry';
import { handlerFor } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { BearerGuard, OPERATOR_AUTHORIZATION, startDashboardApp } from '../support/dashboard-app.js';
import { SUITE_OPTIONS, useSuite } from '../support/suite.js';

interface Fleet {
  now: number;
  intervalMs: number;
  missedBeats: number;
  instances: Array<{ id: string; status: 'up' | 'gone'; goneAt?: number; lastSeen: number; queues: Array<{ queue: string; consuming: boolean }> }>;
  summary: { up: number; gone: number; parkedLastHour: number };
}
interface History {
  queues: Array<{ queue: string; points: Array<{ handled: number; parked: number; failed: number; processing?: { p50: number } }> }>;
}

const INTERVAL_MS = 500;
const auth = { authorization: OPERATOR_AUTHORIZATION };

describe('the console: every instance of the application from its heartbeats, and the last hour per queue', () => {
  const suite = useSuite('e2e.fleet');

  /** An instance of one application: its handler parks messages whose body says so, and its page beats every 500 ms. */
  async function instance(application: string, access: 'guarded' | 'closed' = 'guarded') {
    const guard = access === 'guarded' ? BearerGuard : undefined;
    const Handler = handlerFor({ queue: suite.queue, delays: [100] }, (body) => {
      if ((body as { poison?: boolean }).poison) throw new NonRetryableError('poison');
    });
    const started = await startDashboardApp([Handler], { path: '/retry', guard, heartbeatIntervalMs: INTERVAL_MS }, undefined, undefined, {
      ...SUITE_OPTIONS,
      application,
    });
    suite.apps.push(started.app);
    return started;
  }

  const read = async <T>(url: string): Promise<T> => {
    const response = await fetch(url, { headers: auth });
    expect(response.status).toBe(200);
    return (await response.json()) as T;
  };

  it("shows both instances and their queue, sums their counts per minute, and shows one gone within its missed beats' bound", async () => {
    const { broker, queue } = suite;
    const application = uniqueName('e2e-fleet-app');
    const page = await instance(application);
    const other = await instance(application);
    await waitFor(async () => (await read<Fleet>(`${page.url}/retry/api/fleet`)).summary.up === 2, 'two instances up');

    for (let i = 0; i < 20; i++) await broker.publish('', queue, { i, poison: i % 5 === 0 });
    await waitFor(async () => (await broker.count(`${queue}.error`)) === 4, 'the four poison messages parked');
    await waitFor(async () => {
      const { queues } = await read<History>(`${page.url}/retry/api/history?minutes=60`);
      const points = queues.find((q) => q.queue === queue)?.points ?? [];
      const sum = (key: 'handled' | 'parked' | 'failed') => points.reduce((n, p) => n + p[key], 0);
      return sum('handled') === 16 && sum('parked') === 4 && sum('failed') === 4 && points.some((p) => p.processing !== undefined);
    }, 'both instances’ counts in the history');
    const { queues } = await read<History>(`${page.url}/retry/api/history`);
    expect(queues.find((q) => q.queue === queue)?.points).toHaveLength(60);

    const fleet = await read<Fleet>(`${page.url}/retry/api/fleet`);
    expect(fleet.instances.every((i) => i.queues.some((q) => q.queue === queue && q.consuming))).toBe(true);
    expect(fleet.summary.parkedLastHour).toBe(4);

    const [closed] = suite.apps.splice(1, 1);
    const stoppedAt = Date.now(); // its last beat was sent before
    await closed.close();
    await waitFor(async () => (await read<Fleet>(`${page.url}/retry/api/fleet`)).summary.gone === 1, 'the closed instance gone', 10_000);
    const seenGoneMs = Date.now() - stoppedAt;
    expect(seenGoneMs).toBeLessThanOrEqual(fleet.missedBeats * fleet.intervalMs + INTERVAL_MS); // the bound, and a poll's slack
    const after = await read<Fleet>(`${page.url}/retry/api/fleet`);
    const gone = after.instances.find((i) => i.status === 'gone');
    expect(gone?.goneAt).toBe((gone?.lastSeen ?? 0) + after.missedBeats * after.intervalMs);
    void other;
  });

  it('ignores a forged heartbeat: from another broker user, malformed, or naming no queue of the application (another application: not listed)', async () => {
    const { broker, queue } = suite;
    const application = uniqueName('e2e-fleet-app');
    const page = await instance(application);
    await waitFor(async () => (await read<Fleet>(`${page.url}/retry/api/fleet`)).summary.up === 1, 'the instance up');
    const key = `amqp-retry.heartbeat.${application}`;
    const zeros = new Array(21).fill(0);
    const beat = (id: string, q: string) => ({
      v: 1,
      application,
      instance: { id, host: 'forged', pid: 1, version: '6.6.6', startedAt: 1 },
      seq: 1,
      sentAt: Date.now(),
      intervalMs: 60_000,
      queues: [{ queue: q, consuming: true, state: 'open', handled: 1000, retried: 0, parked: 1000, failed: 0, processing: zeros, critical: zeros }],
    });
    // without user_id (the broker leaves it unset): not from the application's user
    await broker.publish('amqp-retry.control', key, beat('forged-1', queue));
    // the right user, but malformed, or naming a queue of no handler of the application
    await broker.publish('amqp-retry.control', key, { ...beat('forged-2', queue), v: 9 }, { userId: 'guest' });
    await broker.publish('amqp-retry.control', key, beat('forged-3', uniqueName('not.ours')), { userId: 'guest' });
    // Then one of the application's user naming its queue: once it shows, the others were read before it.
    await broker.publish('amqp-retry.control', key, beat('same-user', queue), { userId: 'guest' });
    await waitFor(async () => (await read<Fleet>(`${page.url}/retry/api/fleet`)).instances.some((i) => i.id === 'same-user'), 'the well-formed one');
    const fleet = await read<Fleet>(`${page.url}/retry/api/fleet`);
    // forged-3 names no queue of the application: another application's instance, not listed
    expect(fleet.instances.map((i) => i.id).filter((id) => id.startsWith('forged') || id === 'same-user')).toEqual(['same-user']);
  });

  it('keeps the guard and the cross-site rules on the new routes', async () => {
    const { broker, queue } = suite;
    const closed = await instance(uniqueName('e2e-fleet-app'), 'closed');
    for (const path of ['/retry/api/fleet', '/retry/api/history', '/retry/api/groups/actions']) {
      const response = await fetch(closed.url + path, { headers: auth });
      expect([path, response.status]).toEqual([path, 403]);
    }
    const guarded = await instance(uniqueName('e2e-fleet-app'));
    await broker.publish('', queue, { poison: true });
    await waitFor(async () => (await broker.count(`${queue}.error`)) === 1, 'one parked message');
    const html = await (await fetch(`${guarded.url}/retry`, { headers: auth })).text();
    const token = /name="retry-dashboard-token" content="([^"]+)"/.exec(html)?.[1] ?? '';
    const summary = await read<{ groups: Array<{ key: string }> }>(`${guarded.url}/retry/api/summary`);
    const body = JSON.stringify({ errorQueue: `${queue}.error`, group: summary.groups[0].key });
    for (const action of ['replay', 'purge']) {
      const path = `/retry/api/groups/${action}`;
      const json = { ...auth, 'content-type': 'application/json' };
      const refusals = [
        ['no credentials', { 'content-type': 'application/json', 'x-retry-dashboard-token': token }, 401],
        ['no page token', json, 403],
        ['a cross-site post', { ...json, 'x-retry-dashboard-token': token, 'sec-fetch-site': 'cross-site' }, 403],
      ] as const;
      for (const [what, headers, status] of refusals) {
        const response = await fetch(guarded.url + path, { method: 'POST', headers, body });
        expect([path, what, response.status]).toEqual([path, what, status]);
      }
      const scoped = await fetch(guarded.url + path, {
        method: 'POST',
        headers: { ...json, 'x-retry-dashboard-token': token },
        body: JSON.stringify({ errorQueue: 'some.business.queue', group: summary.groups[0].key }),
      });
      expect([path, 'another queue', scoped.status]).toEqual([path, 'another queue', 400]);
    }
    expect(await broker.count(`${queue}.error`)).toBe(1); // nothing refused changed anything
    const purged = await fetch(`${guarded.url}/retry/api/groups/purge`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'x-retry-dashboard-token': token },
      body,
    });
    expect(await purged.json()).toMatchObject({ action: 'purge', matched: 1, done: 1, by: 'unknown' });
    expect(await read<Array<{ action: string }>>(`${guarded.url}/retry/api/groups/actions`)).toMatchObject([{ action: 'purge', done: 1 }]);
    expect((await fetch(`${guarded.url}/retry/api/groups/actions`)).status).toBe(401);
    for (const path of ['/retry/api/fleet', '/retry/api/history?minutes=5', '/retry/api/groups/actions']) {
      expect([path, (await fetch(guarded.url + path)).status]).toEqual([path, 401]);
      const crossSite = await fetch(guarded.url + path, { headers: { ...auth, 'sec-fetch-site': 'cross-site' } });
      expect([path, crossSite.status]).toEqual([path, 403]);
      expect([path, (await fetch(guarded.url + path, { headers: auth })).status]).toEqual([path, 200]);
    }
    const bad = await fetch(`${guarded.url}/retry/api/history?minutes=soon`, { headers: auth });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('minutes is \\"soon\\"');
  });
});
