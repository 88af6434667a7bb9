import 'reflect-metadata';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as broker from './shared/scenario';
import { expectedOutcome, runScenario } from './shared/scenario';
import { expectedTransportOutcome, runTransportScenario } from './shared/transport-scenario';

test('a CommonJS app on Nest 12 loads the CommonJS build, once', async () => {
  assert.deepEqual(await runScenario(), expectedOutcome);
  const builds = Object.keys(require.cache).filter((file) => /nestjs-amqp-retry[\\/]dist[\\/]\w+[\\/]index\.js$/.test(file));
  assert.deepEqual(
    builds.map((file) => file.replace(/.*nestjs-amqp-retry[\\/]/, '')),
    ['dist/cjs/index.js'],
  );
});

test('runs the microservices transport: an event retried once, one parked, a request answered', async () => {
  assert.deepEqual(await runTransportScenario(broker), expectedTransportOutcome);
});
