import 'reflect-metadata';
import { expectedOutcome, runScenario } from './shared/scenario';

describe('nestjs-amqp-retry in a Nest 10 CommonJS app under Jest', () => {
  it('retries a failure once, then parks a handler that keeps failing', async () => {
    expect(await runScenario()).toEqual(expectedOutcome);
  }, 30_000);
});
