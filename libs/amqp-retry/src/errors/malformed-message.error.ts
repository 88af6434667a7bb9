/**
 * A message the library cannot take in, found while a handler's wrapper reads it (an idempotency or ordering key
 * that cannot be had): it is parked as malformed at once, without retries and without calling the handler.
 */
export class MalformedMessageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedMessageError';
  }
}
