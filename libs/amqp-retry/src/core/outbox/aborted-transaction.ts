import { errorMessage } from '../text/error-message.format.js';

/** PostgreSQL's SQLSTATE for a statement in a transaction a failed statement aborted. */
export const IN_FAILED_SQL_TRANSACTION = '25P02';

/**
 * A transaction in which a statement failed commits nothing: PostgreSQL ends it with a ROLLBACK at COMMIT, without an
 * error. A handler that caught such a failure (an "insert, ignore the duplicate" that was not ON CONFLICT) would have
 * its message acked with none of its writes, the inbox record included. This error makes it fail (and retry) instead;
 * `cause` is what showed it, when a statement did.
 */
export function abortedTransactionError(cause?: unknown): Error {
  return new Error(
    `the handler's transaction commits nothing: a statement in it failed (its error was caught?), and PostgreSQL ends such a transaction with a ROLLBACK at COMMIT; the message fails instead of being acked with nothing written. Let the error through, or use a SAVEPOINT (or ON CONFLICT) for a statement allowed to fail${cause === undefined ? '' : ` (${errorMessage(cause)})`}`,
  );
}
