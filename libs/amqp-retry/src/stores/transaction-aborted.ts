/**
 * A transaction in which a statement failed commits nothing: PostgreSQL ends it with a ROLLBACK at COMMIT, without an
 * error. A handler that caught such a failure (an "insert, ignore the duplicate" that was not ON CONFLICT) would have
 * its message acked with none of its writes, the inbox record included. This error makes it fail (and retry) instead.
 */
export function abortedTransactionError(adapter: string): Error {
  return new Error(
    `${adapter}: a statement of the handler's transaction failed (its error was caught?), so PostgreSQL would commit none of it; the message fails instead of being acked with nothing written. Let the error through, or use a SAVEPOINT (or ON CONFLICT) for a statement allowed to fail`,
  );
}
