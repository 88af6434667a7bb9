import 'reflect-metadata';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import * as broker from './shared/scenario.js';
import { expectedOutcome, runScenario } from './shared/scenario.js';
import { expectedTransportOutcome, runTransportScenario } from './shared/transport-scenario.js';

test('an ES module app resolves the ES module build', () => {
  const resolved = import.meta.resolve('nestjs-amqp-retry');
  assert.match(resolved, /\/nestjs-amqp-retry\/dist\/esm\/index\.js$/);
  // and a require from the same app would get the CommonJS one: the exports conditions hold both
  assert.match(createRequire(import.meta.url).resolve('nestjs-amqp-retry'), /\/nestjs-amqp-retry\/dist\/cjs\/index\.js$/);
  assert.match(import.meta.resolve('nestjs-amqp-retry/transport'), /\/nestjs-amqp-retry\/dist\/esm\/transport\/index\.js$/);
});

test('retries a failure once, then parks a handler that keeps failing', async () => {
  assert.deepEqual(await runScenario(), expectedOutcome);
});

test('runs the microservices transport: an event retried once, one parked, a request answered', async () => {
  assert.deepEqual(await runTransportScenario(broker), expectedTransportOutcome);
});
