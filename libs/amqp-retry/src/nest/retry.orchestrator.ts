import { Injectable, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { EngineHandler } from '../engine/handler.runtime.js';
import { RetryEngine } from '../engine/retry.engine.js';
import { RetryHandlerExplorer } from './retry-handler.explorer.js';

/**
 * Ties the engine to Nest's lifecycle: handlers are found and validated at module init (a bad configuration fails
 * before anything is declared) and declared there, so that any module may publish from its own bootstrap hook;
 * consumed at bootstrap (so `app.init()` resolves with every consumer running); stopped at module destroy (handlers
 * in flight finish); and the connections closed at application shutdown, so that other modules can still publish
 * from their own destroy hooks.
 *
 * RetryModule runs its hooks around every other module's (see RetryModule): consumers start after every other
 * module has bootstrapped and stop before any other module is destroyed, so a handler never uses a provider that
 * is not ready or already closed.
 */
@Injectable()
export class RetryOrchestrator implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown {
  private handlers: EngineHandler[] = [];

  constructor(
    private readonly explorer: RetryHandlerExplorer,
    private readonly engine: RetryEngine,
  ) {}

  /** Declares everything at init, so that other modules may publish from their own bootstrap hooks. */
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
