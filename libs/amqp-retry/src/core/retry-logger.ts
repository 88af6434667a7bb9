/**
 * What the engine logs through: Nest's Logger fits it, and so does any console-like logger, so the engine and the
 * broker layer need no Nest.
 */
export interface RetryLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug(message: string): void;
}
