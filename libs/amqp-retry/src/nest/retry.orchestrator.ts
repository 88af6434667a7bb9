import { Injectable, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { EngineHandler } from '../engine/handler.runtime.js';
import { RetryEngine } from '../engine/retry.engine.js';
import { RetryHandlerExplorer } from './retry-handler.explorer.js';

/**
 * Ties the engine to Nest's lifecycle: handlers are declared at module init, so that any module may publish from its
 * bootstrap hook; consumed at bootstrap; stopped at module destroy (handlers in flight finish); and the connections
 * closed at application shutdown, so that other modules can still publish from their destroy hooks.
 */
@Injectable()
export class RetryOrchestrator implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown {
  private handlers: EngineHandler[] = [];

  constructor(
    private readonly explorer: RetryHandlerExplorer,
    private readonly engine: RetryEngine,
  ) {}

  async onModuleInit(): Promise<void> {
    this.handlers = this.explorer.explore();
    await this.engine.prepare(this.handlers);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.engine.consume();
  }

  async onModuleDestroy(): Promise<void> {
    await this.engine.stopConsuming();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.engine.close();
  }
}
