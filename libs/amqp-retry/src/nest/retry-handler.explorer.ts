import { Inject, Injectable, Logger } from '@nestjs/common';
import { DiscoveryService, ExternalContextCreator, MetadataScanner, Reflector } from '@nestjs/core';
import { assertDistinctQueues, resolveHandlerConfig } from '../core/config/handler.config.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import { unknownHandlerOptions, unknownModuleOptions } from '../core/config/option-keys.js';
import type { RetryHandlerOptions, RetryModuleOptions } from '../core/config/retry.options.js';
import type { EngineHandler } from '../engine/handler.runtime.js';
import { handlerInvoker } from './handler.invoker.js';
import { withoutExceptionLogs } from './quiet-exceptions.context.js';
import { RETRY_HANDLER_METADATA, RETRY_MODULE_CONFIG } from './retry.constants.js';
import { RETRY_MODULE_OPTIONS } from './retry-module.definition.js';

/**
 * Finds the @RetryWithBackoff methods of every provider and controller of this application, validates them together,
 * and wraps each in Nest's external context (see handlerInvoker).
 */
@Injectable()
export class RetryHandlerExplorer {
  private readonly logger = new Logger('RetryModule');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly contextCreator: ExternalContextCreator,
    @Inject(RETRY_MODULE_CONFIG) private readonly moduleConfig: ModuleConfig,
    @Inject(RETRY_MODULE_OPTIONS) private readonly moduleOptions: RetryModuleOptions,
  ) {}

  /** The handlers, validated; a key that is no option (a misspelling) is named in a warning, here at start. */
  explore(): EngineHandler[] {
    for (const line of unknownModuleOptions(this.moduleOptions ?? {}, ['isGlobal'])) this.logger.warn(line);
    const seen = new Set<object>();
    const handlers: EngineHandler[] = [];
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      if (!wrapper.isDependencyTreeStatic()) {
        // No single instance exists to consume with; say so rather than ignore the decorator silently.
        const prototype: unknown = (wrapper.metatype as { prototype?: unknown } | null)?.prototype;
        for (const { methodName } of this.decoratedMethods(prototype)) {
          this.logger.warn(`${wrapper.name}.${methodName} is request-scoped or depends on a request-scoped provider; @RetryWithBackoff ignores it`);
        }
        continue;
      }
      const instance: unknown = wrapper.instance;
      if (typeof instance !== 'object' || instance === null || seen.has(instance)) continue;
      seen.add(instance);
      const contextCreator = this.creatorFor(wrapper.host?.token);
      for (const { methodName, method, options } of this.decoratedMethods(Object.getPrototypeOf(instance))) {
        const where = `${instance.constructor.name}.${methodName}`;
        for (const line of unknownHandlerOptions(options, where)) this.logger.warn(line);
        handlers.push({
          config: resolveHandlerConfig(options, this.moduleConfig, where),
          where,
          invoke: handlerInvoker(contextCreator, instance, method, methodName, this.moduleConfig.retryLogs === 'line'),
        });
      }
    }
    assertDistinctQueues(handlers);
    return handlers;
  }

  /**
   * Nest's ExternalContextCreator finds a host's module among providers only, so class-referenced interceptors and
   * filters on a controller's method would be silently dropped: a creator that answers the instance's module key makes
   * controllers behave as providers do.
   */
  private creatorFor(moduleKey: string | undefined): ExternalContextCreator {
    const base = this.moduleConfig.retryLogs === 'line' ? withoutExceptionLogs(this.contextCreator) : this.contextCreator;
    if (moduleKey === undefined) return base;
    const creator = Object.create(base) as ExternalContextCreator;
    const findKey = this.contextCreator.getContextModuleKey.bind(this.contextCreator);
    creator.getContextModuleKey = (moduleCtor) => findKey(moduleCtor) || moduleKey;
    return creator;
  }

  private *decoratedMethods(prototype: unknown) {
    if (typeof prototype !== 'object' || prototype === null) return;
    for (const methodName of this.scanner.getAllMethodNames(prototype)) {
      const method: unknown = (prototype as Record<string, unknown>)[methodName];
      if (typeof method !== 'function') continue;
      const options = this.reflector.get<RetryHandlerOptions | undefined>(RETRY_HANDLER_METADATA, method);
      if (options) yield { methodName, method: method as (...args: unknown[]) => unknown, options };
    }
  }
}
