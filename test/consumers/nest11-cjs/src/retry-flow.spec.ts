import 'reflect-metadata';
import * as broker from './shared/scenario';
import { expectedOutcome, runScenario } from './shared/scenario';
import { expectedTransportOutcome, runTransportScenario } from './shared/transport-scenario';

describe('nestjs-amqp-retry in a Nest 11 CommonJS app under Jest', () => {
  it('retries a failure once, then parks a handler that keeps failing', async () => {
    expect(await runScenario()).toEqual(expectedOutcome);
  }, 30_000);

  it('runs the microservices transport: an event retried once, one parked, a request answered', async () => {
    expect(await runTransportScenario(broker)).toEqual(expectedTransportOutcome);
  }, 30_000);
});
