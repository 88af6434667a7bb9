/** Metadata key under which @RetryWithBackoff stores its options on the method. */
export const RETRY_HANDLER_METADATA = 'nestjs-amqp-retry:handler';

/** Injection token of the resolved, validated module configuration (ModuleConfig). */
export const RETRY_MODULE_CONFIG = Symbol('nestjs-amqp-retry:module-config');
