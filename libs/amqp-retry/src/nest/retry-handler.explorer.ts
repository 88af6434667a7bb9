import { Inject, Injectable, Logger } from '@nestjs/common';
import { DiscoveryService, ExternalContextCreator, MetadataScanner, Reflector } from '@nestjs/core';
import type { HandlerInvoker } from '../amqp/retry-delivery.handler.js';
import { assertDistinctQueues, resolveHandlerConfig, type HandlerConfig } from '../core/handler-config.js';
import type { ModuleConfig } from '../core/module-config.js';
import type { RetryHandlerOptions } from '../core/retry-options.js';
import { RETRY_HANDLER_METADATA, RETRY_MODULE_CONFIG } from './retry.constants.js';

/** A @RetryWithBackoff method found in the application, with its validated configuration. */
export interface DiscoveredHandler {
  config: HandlerConfig;
  /** "Class.method", for messages. */
  where: string;
  invoke: HandlerInvoker;
}

/**
 * Finds the @RetryWithBackoff methods of every provider and controller of this application (not of the process:
 * several applications each see their own), validates them together, and wraps each in Nest's external context so
 * that the application's interceptors, guards and exception filters apply.
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
  ) {}

  explore(): DiscoveredHandler[] {
    const seen = new Set<object>();
    const handlers: DiscoveredHandler[] = [];
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
      for (const { methodName, method, options } of this.decoratedMethods(Object.getPrototypeOf(instance))) {
        const where = `${instance.constructor.name}.${methodName}`;
        handlers.push({
          config: resolveHandlerConfig(options, this.moduleConfig, where),
          where,
          invoke: this.contextCreator.create(
            instance,
            method,
            methodName,
            undefined,
            undefined,
            undefined,
            undefined,
            { guards: true, interceptors: true, filters: true },
            'rpc',
          ),
        });
      }
    }
    assertDistinctQueues(handlers);
    return handlers;
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
