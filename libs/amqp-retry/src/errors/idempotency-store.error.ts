/**
 * The idempotency store could not be reached, or did not answer in time. Always retryable, whatever `nonRetryable`
 * says: a message is never handled without the store's answer.
 */
export class IdempotencyStoreError extends Error {
  constructor(operation: string, key: string, cause: unknown) {
    super(
      `the idempotency store failed to ${operation} "${key}" (${cause instanceof Error ? cause.message : String(cause)}); the message is retried, not handled without it. Check that the store is reachable`,
      { cause },
    );
    this.name = 'IdempotencyStoreError';
  }
}
