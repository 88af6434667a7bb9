/**
 * `nestjs-amqp-retry/testing`: the test harness. It runs an application's own Nest module on an in-memory RabbitMQ
 * and a virtual clock, so that a unit test sees the library's real decisions (attempts, tiers, parking, headers) in
 * milliseconds. See docs/testing-your-handlers.md.
 * @packageDocumentation
 */
export {
  RetryHarness,
  type HarnessModuleBuilder,
  type HarnessCompiledModule,
  type RetryHarnessOptions,
  type HarnessMicroservice,
  type HarnessParked,
  type HarnessPublished,
  type HarnessPublishProperties,
  type HarnessPublishReceipt,
  type HarnessQueueState,
} from './retry.harness.js';
export type { HarnessAttempt, HarnessHandled, AttemptOutcome } from './harness.records.js';
export { HarnessFailures, type PublishMatcher } from './harness.failures.js';
export type { PublishRecord } from './memory.channel.js';
