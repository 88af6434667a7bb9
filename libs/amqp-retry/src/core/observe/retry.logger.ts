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

/** A logger that says nothing: for the operators' tools, whose failures reach their caller through the call that fails. */
export const SILENT_LOGGER: RetryLogger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
