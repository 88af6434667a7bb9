import { RetryEngine } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf } from '../support/app.js';
import { launchBrowser } from '../support/browser.js';
import { waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { BearerGuard, OPERATOR_AUTHORIZATION, startDashboardApp } from '../support/dashboard-app.js';

const TOKEN_HEADER = 'x-retry-dashboard-token';
const tokenOf = (html: string) => /name="retry-dashboard-token" content="([^"]+)"/.exec(html)?.[1] ?? '';

/** The page's "Consumption" list: each handler queue's state, who paused it and since when, and the pause/resume button. */
describe('parked-messages page: pause and resume a handler queue', () => {
  const suite = useSuite('e2e.page-flow');

  it('pauses through the API behind the guard and the page token, shows who and since when, and refuses what it must', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue }, () => undefined);
    const started = await startDashboardApp([Handler], { path: '/retry', guard: BearerGuard });
    const app = (suite.app = started.app);
    const auth = { authorization: OPERATOR_AUTHORIZATION };
    const html = await (await fetch(`${started.url}/retry`, { headers: auth })).text();
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${started.url}/retry/api/queue-states/${path}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', [TOKEN_HEADER]: tokenOf(html), ...headers },
        body: JSON.stringify(body),
      });

    expect((await post('pause', { queue, by: 'alice' }, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await post('pause', { queue, by: 'alice' }, { [TOKEN_HEADER]: 'forged' })).status).toBe(403);
    const other = await post('pause', { queue: 'someone-elses-queue', by: 'alice' });
    expect(other.status).toBe(400);
    expect(await other.text()).toContain('\\"someone-elses-queue\\" is not a handler queue of this application');
    expect((await post('pause', { queue })).status).toBe(400); // by is missing
    expect(app.get(RetryEngine).queueStates()[0].state).toBe('running');

    const paused = await post('pause', { queue, by: 'alice', reason: 'INC-142' });
    expect(paused.status).toBe(200);
    expect(await paused.json()).toMatchObject({ queue, state: 'paused', paused: { by: 'alice', reason: 'INC-142' } });
    await waitFor(async () => (await broker.consumers(queue)) === 0, 'the consumer cancelled');
    const states = await (await fetch(`${started.url}/retry/api/queue-states`, { headers: { ...auth, accept: 'application/json' } })).json();
    expect(states).toEqual([{ queue, state: 'paused', paused: { by: 'alice', reason: 'INC-142', since: expect.any(String) } }]);

    expect(await (await post('resume', { queue, by: 'bob' })).json()).toMatchObject({ state: 'running' });
    await waitFor(async () => (await broker.consumers(queue)) === 1, 'the consumer back');
  });

  it('shows the state on the page, and its button pauses and resumes', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue }, () => undefined);
    const started = await startDashboardApp([Handler], { path: '/retry', guard: BearerGuard });
    const app = (suite.app = started.app);
    const browser = await launchBrowser();
    try {
      await browser.context.setExtraHTTPHeaders({ authorization: OPERATOR_AUTHORIZATION });
      const page = await browser.context.newPage();
      const answers = ['carol', 'payments API down'];
      page.on('dialog', (dialog) => void dialog.accept(answers.shift()));
      await page.goto(`${started.url}/retry`);
      const row = page.locator(`li[data-flow-queue="${queue}"]`);
      await row.locator('.flow-state').getByText('running').waitFor();
      await row.getByRole('button', { name: 'Pause' }).click();
      await page.locator(`li[data-flow-queue="${queue}"][data-state="paused"]`).waitFor();
      expect(await row.locator('.flow-state').textContent()).toMatch(/^paused by carol since .+ \(payments API down\)$/);
      expect(app.get(RetryEngine).queueStates()[0]).toMatchObject({ state: 'paused', paused: { by: 'carol', reason: 'payments API down' } });
      // The queues table's State column says it too (RetryEngine.activity()'s state).
      const stateCell = page.locator(`#queues tr[data-queue="${queue}"] [data-slot="state"]`);
      await stateCell.getByText('paused by carol').waitFor();

      await broker.publish('', queue, { n: 1 });
      await row.getByRole('button', { name: 'Resume' }).click();
      await page.locator(`li[data-flow-queue="${queue}"][data-state="running"]`).waitFor();
      await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the message handled after the resume');
      await stateCell.getByText(/^consuming/).waitFor();
    } finally {
      await browser.close();
    }
  });
});
