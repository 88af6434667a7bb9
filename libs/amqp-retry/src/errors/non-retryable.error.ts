/**
 * Throw this from a handler to park the message at once, without retries.
 * @example throw new NonRetryableError(`order ${id} references an unknown customer`);
 */
export class NonRetryableError extends Error {
  constructor(message?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}
