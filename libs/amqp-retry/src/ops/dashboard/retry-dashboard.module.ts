import {
  type DynamicModule,
  Inject,
  type InjectionToken,
  Logger,
  Module,
  type ModuleMetadata,
  type OnModuleInit,
  type Provider,
} from '@nestjs/common';
import { DashboardAccessGuard } from './dashboard-access.guard.js';
import { type DashboardConfig, normalisePath, resolveDashboardConfig, type RetryDashboardOptions } from './dashboard.options.js';
import { DASHBOARD_CONFIG } from './dashboard.constants.js';
import { createDashboardController } from './dashboard.controller.js';
import { PageTokens } from './page.token.js';
import { DashboardShutdown } from './dashboard.shutdown.js';
import { FleetWatch } from './fleet.watch.js';
import { GroupActions } from './group.actions.js';

/** forRootAsync: the path is needed when the module is built (it is the controller's route); the rest may wait. */
export interface RetryDashboardAsyncOptions {
  /** The page's route. Default '/retry'. */
  path?: string;
  /** Modules whose providers `useFactory` injects (and the guard's dependencies). */
  imports?: ModuleMetadata['imports'];
  /** The providers passed to `useFactory`, in order. */
  inject?: InjectionToken[];
  /** Makes the page's other options (RetryDashboardOptions but `path` and `imports`), from the injected providers. */
  useFactory: (...args: never[]) => Omit<RetryDashboardOptions, 'path' | 'imports'> | Promise<Omit<RetryDashboardOptions, 'path' | 'imports'>>;
}

/**
 * The parked-messages page: the application's handler queues with their depths (every application's with
 * `wholeVhost`), parked messages grouped by reason and error, a message's detail, replay, edit-and-replay and purge.
 * Served by the application's HTTP server (Express) under `path`; plain HTML, CSS and JavaScript, no build step. It
 * needs `ParkedMessages`, which RetryModule provides. Closed unless `guard` is given (or `allowUnauthenticated: true`,
 * for local use only).
 *
 * @example
 * ```ts
 * @Module({ imports: [RetryModule.forRoot(), RetryDashboardModule.forRoot({ path: '/retry', guard: AdminGuard })] })
 * export class AppModule {}
 * ```
 */
@Module({})
export class RetryDashboardModule implements OnModuleInit {
  constructor(@Inject(DASHBOARD_CONFIG) private readonly config: DashboardConfig) {}

  /** The page with these options; bad options throw here, when the application module is built. */
  static forRoot(options: RetryDashboardOptions = {}): DynamicModule {
    const config = resolveDashboardConfig(options);
    // A guard class becomes a provider of this module: a dependency it cannot get fails the start, not the first request.
    const guard = typeof config.guard === 'function' ? [config.guard] : [];
    return RetryDashboardModule.build(config.path, options.imports, { provide: DASHBOARD_CONFIG, useValue: config }, guard);
  }

  /** The page with options made by a factory from injected providers; `path` is given here, since it is the route. */
  static forRootAsync(options: RetryDashboardAsyncOptions): DynamicModule {
    const path = normalisePath(options.path ?? '/retry');
    return RetryDashboardModule.build(path, options.imports, {
      provide: DASHBOARD_CONFIG,
      useFactory: async (...args: never[]) => resolveDashboardConfig({ ...(await options.useFactory(...args)), path }),
      inject: options.inject ?? [],
    });
  }

  private static build(path: string, imports: ModuleMetadata['imports'], config: Provider, extra: Provider[] = []): DynamicModule {
    return {
      module: RetryDashboardModule,
      imports: imports ?? [],
      controllers: [createDashboardController(path)],
      providers: [
        config,
        {
          provide: PageTokens,
          useFactory: (c: DashboardConfig) => new PageTokens(c.tokenSecret ?? PageTokens.randomKey(), c.tokenTtlMs),
          inject: [DASHBOARD_CONFIG],
        },
        DashboardAccessGuard,
        DashboardShutdown,
        FleetWatch,
        GroupActions,
        ...extra,
      ],
    };
  }

  /** Logs where the page is and who may open it (a warning when it is open to anyone, or refuses every request). */
  onModuleInit(): void {
    const logger = new Logger('RetryDashboard');
    const scope = this.config.wholeVhost ? "every application's parked messages on the vhost (wholeVhost)" : "this application's parked messages";
    if (this.config.guard) logger.log(`Parked-messages page at ${this.config.path}, behind the given guard, showing ${scope}`);
    else if (this.config.open)
      logger.warn(`Parked-messages page at ${this.config.path} is OPEN to anyone who can reach it (allowUnauthenticated); local use only`);
    else logger.warn(`Parked-messages page at ${this.config.path} refuses every request: pass guard, or allowUnauthenticated: true for local use`);
  }
}
