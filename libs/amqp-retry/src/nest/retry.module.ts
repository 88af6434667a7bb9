import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { resolveModuleConfig } from '../core/module-config.js';
import type { RetryModuleOptions } from '../core/retry-options.js';
import { RetryConnectionHost } from './retry-connection.host.js';
import { RetryHandlerExplorer } from './retry-handler.explorer.js';
import { ConfigurableRetryModule, RETRY_MODULE_ASYNC_OPTIONS_TYPE, RETRY_MODULE_OPTIONS } from './retry-module.definition.js';
import { RETRY_MODULE_CONFIG } from './retry.constants.js';
import { RetryOrchestrator } from './retry.orchestrator.js';
import { RetryPublisher } from './retry.publisher.js';

/**
 * Broker-side retries for @RetryWithBackoff handlers. Global by default; each option comes from `forRoot()`, else
 * the environment (AMQP_URL, RETRY_DELAYS, RETRY_MAX_ATTEMPTS, RETRY_PREFETCH), else the default.
 *
 * @example
 * ```ts
 * @Module({ imports: [RetryModule.forRoot()] })
 * export class AppModule {}
 * ```
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: RETRY_MODULE_CONFIG,
      // The one place the environment is read; invalid configuration fails here, when the application is created.
      useFactory: (options: RetryModuleOptions) => resolveModuleConfig(options, process.env),
      inject: [RETRY_MODULE_OPTIONS],
    },
    RetryConnectionHost,
    RetryHandlerExplorer,
    RetryOrchestrator,
    RetryPublisher,
  ],
  exports: [RetryPublisher],
})
export class RetryModule extends ConfigurableRetryModule {
  static override forRoot(options: RetryModuleOptions & { isGlobal?: boolean } = {}): DynamicModule {
    return super.forRoot(options);
  }

  static override forRootAsync(options: typeof RETRY_MODULE_ASYNC_OPTIONS_TYPE): DynamicModule {
    return super.forRootAsync(options);
  }
}
