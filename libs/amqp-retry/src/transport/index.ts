/**
 * The `nestjs-amqp-retry/transport` entry: the `@nestjs/microservices` transport (`RetryServer`, `RetryClient`), an
 * entry of its own so that applications without `@nestjs/microservices` never load it.
 *
 * @packageDocumentation
 * @module nestjs-amqp-retry/transport
 */
export { RetryServer, type RetryServerStatus } from './retry.server.js';
export { RetryClient, type RetryClientStatus } from './retry.client.js';
export { RetryRmqContext, type RetryChannelRef } from './retry-rmq.context.js';
export { RetryRpcExceptionFilter } from './retry-rpc-exception.filter.js';
export type { RetryServerOptions, RetryClientOptions, RetryEmitOptions, EventRetryOptions } from './retry-transport.options.js';
export { retryQueueOptions } from './retry-queue.options.js';
export type { PublishedMessage, PublishOptions } from '../core/publish/publish.options.js';
