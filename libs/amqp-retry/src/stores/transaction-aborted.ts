/**
 * PostgreSQL's state of a transaction in which a statement failed: it commits nothing, and COMMIT ends it as a
 * ROLLBACK without an error. A handler that caught a failed statement (an "insert, ignore the duplicate" that was not
 * ON CONFLICT) would have its message acked with none of its writes, the inbox record included.
 */
export const ABORTED_TRANSACTION = 'E';

/** The error that makes such a message fail (and retry) instead of being acked with nothing written. */
export function abortedTransactionError(adapter: string): Error {
  return new Error(
    `${adapter}: a statement of the handler's transaction failed (its error was caught?), so PostgreSQL would commit none of it; the message fails instead of being acked with nothing written. Let the error through, or use a SAVEPOINT (or ON CONFLICT) for a statement allowed to fail`,
  );
}
