import type { ModuleConfig } from '../core/config/module.config.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { ConsumingSide, type ConsumingSideDeps } from './consuming.side.js';
import type { PublishingSide } from './publishing.side.js';

/** A consuming side with one handler queue and a control side that records when it starts again. */
function recoveringSide(events: string[], restart: () => Promise<void>) {
  const logger = { log: () => undefined, warn: () => undefined, error: () => undefined } as unknown as RetryLogger;
  const deps = {
    config: { urls: ['amqp://guest:guest@localhost'] } as ModuleConfig,
    logger,
    observers: {} as ObserverHub,
    publishing: { forgetLadder: () => undefined } as unknown as PublishingSide,
    outbox: {},
    replyAddresses: {},
  } as unknown as ConsumingSideDeps;
  const side = new ConsumingSide(deps);
  const runtime = {
    queue: 'orders',
    handler: { config: { queueType: 'classic' } },
    resume: async () => void events.push('consumer resumed'),
  };
  Object.assign(side, { runtimes: [runtime] });
  Object.assign(side.control, { restart });
  return { recover: () => (side as unknown as { recover: () => Promise<void> }).recover() };
}

describe('ConsumingSide recovery', () => {
  it('binds the control listener again before the consumers resume: a partition handed over meanwhile keeps its note', async () => {
    const events: string[] = [];
    const { recover } = recoveringSide(events, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      events.push('control listening');
    });
    await recover();
    expect(events).toEqual(['control listening', 'consumer resumed']);
  });
});
