import { type DynamicModule, Logger, Module } from '@nestjs/common';
import { DiscoveryModule, ModulesContainer } from '@nestjs/core';
import { readModuleOptions, resolveModuleConfig, type ModuleConfig } from '../core/config/module.config.js';
import type { RetryModuleOptions } from '../core/config/retry.options.js';
import { RetryEngine } from '../engine/retry.engine.js';
import { resolveObservers } from '../observability/observers.resolve.js';
import { ParkedMessages } from '../ops/parked-messages.service.js';
import { RetryHandlerExplorer } from './retry-handler.explorer.js';
import { ConfigurableRetryModule, RETRY_MODULE_ASYNC_OPTIONS_TYPE, RETRY_MODULE_OPTIONS } from './retry-module.definition.js';
import { RETRY_MODULE_CONFIG } from './retry.constants.js';
import { RetryOrchestrator } from './retry.orchestrator.js';
import { OutboxPublisher } from './outbox.publisher.js';
import { RetryPublisher } from './retry.publisher.js';

/**
 * Broker-side retries for `@RetryWithBackoff` handlers. Global by default; each option comes from `forRoot()`, else
 * the environment (AMQP_URL, RETRY_DELAYS, RETRY_MAX_ATTEMPTS, RETRY_PREFETCH, ...), else the default.
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
      useFactory: (options: unknown) => resolveModuleConfig(readModuleOptions(options), process.env),
      inject: [RETRY_MODULE_OPTIONS],
    },
    {
      provide: RetryEngine,
      // Optional dependencies (prom-client...) are loaded here, only for the features turned on.
      useFactory: async (config: ModuleConfig, options: RetryModuleOptions) =>
        RetryEngine.fromConfig(config, new Logger('RetryModule'), await resolveObservers(options)),
      inject: [RETRY_MODULE_CONFIG, RETRY_MODULE_OPTIONS],
    },
    {
      provide: ParkedMessages,
      // Connects on first use, with a connection of its own: an application that never inspects pays nothing. It sees
      // this application's queues only, as its engine runs them at each call: never another application's.
      useFactory: (config: ModuleConfig, engine: RetryEngine) =>
        new ParkedMessages({}, { own: () => engine.parkingQueues(), live: () => engine.activity(), broker: config }),
      inject: [RETRY_MODULE_CONFIG, RetryEngine],
    },
    RetryHandlerExplorer,
    RetryOrchestrator,
    RetryPublisher,
    OutboxPublisher,
  ],
  exports: [RetryPublisher, OutboxPublisher, RetryEngine, ParkedMessages],
})
export class RetryModule extends ConfigurableRetryModule {
  /**
   * Nest runs lifecycle hooks module by module, by distance from the root: a global module's `onModuleDestroy` runs
   * after every other module's, so consumers would still take deliveries while the application's own modules close
   * their pools. Distance 0 puts this module last for init and bootstrap and first for destroy: consumers start once
   * everything else is ready and stop before anything else closes. Distances are read when `init()` starts, after
   * module classes are instantiated, so this is the place to set it. The connections close in
   * `onApplicationShutdown`, after every module's destroy hooks, so those can still publish.
   */
  constructor(modules: ModulesContainer) {
    super();
    for (const module of modules.values()) if (module.metatype === RetryModule) module.distance = 0;
  }

  /** The module with these options (each, else the environment, else the default); global unless `isGlobal: false`. */
  static override forRoot(options: RetryModuleOptions & { isGlobal?: boolean } = {}): DynamicModule {
    return super.forRoot(options);
  }

  /** The module with options made by `useFactory` (or `useClass`, `useExisting`) from injected providers. */
  static override forRootAsync(options: typeof RETRY_MODULE_ASYNC_OPTIONS_TYPE): DynamicModule {
    return super.forRootAsync(options);
  }
}
