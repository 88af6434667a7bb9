import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RetryModuleOptions } from '../core/config/retry.options.js';

export const {
  ConfigurableModuleClass: ConfigurableRetryModule,
  /** The injection token of the options given to `RetryModule.forRoot()` or made by `forRootAsync()`'s factory. */
  MODULE_OPTIONS_TOKEN: RETRY_MODULE_OPTIONS,
  OPTIONS_TYPE: RETRY_MODULE_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: RETRY_MODULE_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RetryModuleOptions>({ moduleName: 'Retry' })
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
