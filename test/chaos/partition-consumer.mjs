// One instance of the partitions test: a Nest application with one partitioned @RetryWithBackoff handler, run as a
// child process so that the test can SIGKILL it. Plain ESM JavaScript on the built library, decorators applied by
// hand. It tells the parent, over IPC, which partitions it consumes (every 100 ms).
import 'reflect-metadata';
import { Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RetryEngine, RetryModule, RetryPublisher, RetryWithBackoff } from 'nestjs-amqp-retry';

const { PARTS_URL, PARTS_QUEUE, PARTS_RESULTS, PARTS_COUNT, PARTS_WORK_MS = '5', PARTS_FAILURE_RATE = '0.1', PARTS_PREFETCH = '100' } = process.env;
const failureRate = Number(PARTS_FAILURE_RATE);

class PartitionHandler {
  constructor(publisher) {
    this.publisher = publisher;
  }

  /** Simulated I/O; a tenth of first attempts fail. The result is confirmed before the handler returns (so before the ack). */
  async handle(message, ctx) {
    await new Promise((resolve) => setTimeout(resolve, Number(PARTS_WORK_MS)));
    if (ctx.attempt === 1 && Math.random() < failureRate) throw new Error(`${message.key}#${message.seq} fails once`);
    await this.publisher.publish('', PARTS_RESULTS, {
      key: message.key,
      seq: message.seq,
      attempt: ctx.attempt,
      pid: process.pid,
      partition: ctx.queue,
      at: Date.now(),
    });
  }
}
Inject(RetryPublisher)(PartitionHandler, undefined, 0);
Injectable()(PartitionHandler);
const handle = Object.getOwnPropertyDescriptor(PartitionHandler.prototype, 'handle');
RetryWithBackoff({
  queue: PARTS_QUEUE,
  delays: ['100ms', '200ms'],
  maxAttempts: 5,
  prefetch: Number(PARTS_PREFETCH),
  partitions: { count: Number(PARTS_COUNT), key: { header: 'x-key' }, whileRetrying: 'hold' },
})(PartitionHandler.prototype, 'handle', handle);

class PartitionModule {}
Module({
  imports: [
    RetryModule.forRoot({ url: PARTS_URL, delayedDelivery: false, reconnect: { initialDelay: '100ms', maxDelay: '2s' }, publishTimeout: '60s' }),
  ],
  providers: [PartitionHandler],
})(PartitionModule);

const app = await NestFactory.createApplicationContext(PartitionModule, { logger: ['error', 'warn', 'log'] });
app.enableShutdownHooks();
await app.init();
const engine = app.get(RetryEngine);
const report = () => {
  const [status] = engine.partitions();
  if (status === undefined) return; // stopping
  process.send?.({ pid: process.pid, member: status.member, consuming: status.partitions.filter((p) => p.consuming).map((p) => p.index) });
};
report();
globalThis.setInterval(report, 100).unref();
