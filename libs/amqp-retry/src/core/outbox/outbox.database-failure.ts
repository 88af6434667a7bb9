import { errorMessage } from '../text/error-message.format.js';

/**
 * What the relay's health says of a round that failed in the database, by SQLSTATE: 42501 names the grants; another
 * refusal its code; only the rest (none, 08, 57P, 53) is "cannot reach the database".
 * @example relayDatabaseProblem('amqp_retry_outbox', { code: '42501', message: 'permission denied for table amqp_retry_outbox' })
 */
export function relayDatabaseProblem(table: string, error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = errorMessage(error);
  if (code === '42501') {
    return `the outbox relay of ${table} is refused by the database: ${message} (SQLSTATE 42501, insufficient privilege: grant the relay's database user SELECT, UPDATE and DELETE on ${table}, and INSERT to the writers)`;
  }
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^(08|57P|53)/.test(code)) {
    return `the outbox relay of ${table} has a statement refused by the database: ${message} (SQLSTATE ${code})`;
  }
  return `the outbox relay of ${table} cannot reach the database: ${message}`;
}
