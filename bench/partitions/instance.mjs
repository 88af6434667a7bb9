// One instance of the partitions bench: a Nest application whose handler does 5 ms of simulated I/O per message and
// publishes a result, either partitioned (BENCH_MODE=partitions) or on one single-active-consumer queue with
// ordering by the same key (BENCH_MODE=sac). It tells the parent over IPC when it consumes.
import 'reflect-metadata';
import { Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RetryEngine, RetryModule, RetryPublisher, RetryWithBackoff } from 'nestjs-amqp-retry';

const { BENCH_URL, BENCH_QUEUE, BENCH_RESULTS, BENCH_MODE, BENCH_COUNT = '8', BENCH_WORK_MS = '5', BENCH_PREFETCH = '20' } = process.env;

class BenchHandler {
  constructor(publisher) {
    this.publisher = publisher;
  }

  async handle() {
    await new Promise((resolve) => globalThis.setTimeout(resolve, Number(BENCH_WORK_MS)));
    await this.publisher.publish('', BENCH_RESULTS, { pid: process.pid });
  }
}
Inject(RetryPublisher)(BenchHandler, undefined, 0);
Injectable()(BenchHandler);
const key = { header: 'x-key' };
const options =
  BENCH_MODE === 'partitions'
    ? { queue: BENCH_QUEUE, prefetch: Number(BENCH_PREFETCH), partitions: { count: Number(BENCH_COUNT), key } }
    : { queue: BENCH_QUEUE, prefetch: Number(BENCH_PREFETCH), singleActiveConsumer: true, ordering: { key } };
RetryWithBackoff({ ...options, delays: ['1s'] })(BenchHandler.prototype, 'handle', Object.getOwnPropertyDescriptor(BenchHandler.prototype, 'handle'));

class BenchModule {}
Module({ imports: [RetryModule.forRoot({ url: BENCH_URL, delayedDelivery: false })], providers: [BenchHandler] })(BenchModule);

const app = await NestFactory.createApplicationContext(BenchModule, { logger: process.env.BENCH_LOGS ? ['error', 'warn', 'log'] : ['error', 'warn'] });
app.enableShutdownHooks();
await app.init();
const engine = app.get(RetryEngine);
const report = () => {
  const [status] = engine.partitions();
  process.send?.({ consuming: status ? status.partitions.filter((p) => p.consuming).length : 1 });
};
report();
globalThis.setInterval(report, 100).unref();
