import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { ParkedMessages } from '../parked-messages.service.js';
import { replayProblem, ReplayStoppedError } from '../parked-selection.js';
import { createDashboardController } from './dashboard.controller.js';
import { resolveDashboardConfig } from './dashboard.options.js';
import { GroupActions } from './group.actions.js';
import { PageTokens } from './page.token.js';

type GroupRoute = (action: string, body: unknown, request: { user?: unknown }) => Promise<unknown>;

describe('the dashboard controller', () => {
  afterEach(() => jest.restoreAllMocks());

  it('records and logs a group replay that stopped part-way with what it did, then answers its error', async () => {
    const partial = { matched: 3, replayed: 1, failed: [{ id: 'b', error: replayProblem('unconfirmed', 'orders', undefined) }], dryRun: false };
    const stopped = new ReplayStoppedError('orders.error', partial, 'the channel closed');
    const parked = {
      queues: async () => [{ queue: 'orders', errorQueue: 'orders.error' }],
      summary: async () => ({ total: 3, byReason: [], byError: [], groups: [{ key: 'g1', error: 'declined' }] }),
      replay: async () => Promise.reject(stopped),
    } as unknown as ParkedMessages;
    const groupActions = new GroupActions();
    const Controller = createDashboardController('/retry') as unknown as new (...args: unknown[]) => { group: GroupRoute };
    const controller = new Controller(resolveDashboardConfig({}), new PageTokens(PageTokens.randomKey(), 60_000), parked, {}, {}, groupActions);
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);

    await expect(controller.group('replay', { errorQueue: 'orders.error', group: 'g1', by: 'ana' }, {})).rejects.toThrow(/stopped after 1 of 3/);
    expect(groupActions.list()).toEqual([
      expect.objectContaining({
        by: 'ana',
        action: 'replay',
        group: 'g1',
        error: 'declined',
        matched: 3,
        done: 1,
        failed: 1,
        stopped: stopped.message,
      }),
    ]);
    expect(warned).toHaveBeenCalledWith(
      expect.stringMatching(/^ana replayed 1 of 3 of the group "declined" from orders\.error, then stopped: The replay/),
    );
  });

  it('logs a group action with the escape sequences of its error text escaped', async () => {
    const hostile = 'Unexpected token \'\u001b\', "\u001b[2J\u001b]0;owned\u0007{bad" is not valid JSON';
    const parked = {
      queues: async () => [{ queue: 'orders', errorQueue: 'orders.error' }],
      summary: async () => ({ total: 1, byReason: [], byError: [], groups: [{ key: 'g1', error: hostile }] }),
      purge: async () => ({ matched: 1, purged: 1, dryRun: false }),
    } as unknown as ParkedMessages;
    const Controller = createDashboardController('/retry') as unknown as new (...args: unknown[]) => { group: GroupRoute };
    const controller = new Controller(resolveDashboardConfig({}), new PageTokens(PageTokens.randomKey(), 60_000), parked, {}, {}, new GroupActions());
    const logged = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);

    await controller.group('purge', { errorQueue: 'orders.error', group: 'g1', by: 'ana' }, {});
    expect(logged).toHaveBeenCalledWith(
      'ana purged 1 of 1 of the group "Unexpected token \'\\u001b\', "\\u001b[2J\\u001b]0;owned\\u0007{bad" is not valid JSON" from orders.error',
    );
  });
});
