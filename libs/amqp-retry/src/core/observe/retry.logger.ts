/** What the engine logs through: Nest's Logger or any console-like logger, so that the engine needs no Nest. */
export interface RetryLogger {
  /** A line at the info level: starts, stops, recoveries. */
  log(message: string): void;
  /** A line at the warning level: a retry, a lost connection, a setting that will not work as meant. */
  warn(message: string): void;
  /** A line at the error level: a parked message, a failure the library cannot recover from by itself. */
  error(message: string): void;
  /** A line at the debug level: detail for tracing a problem. */
  debug(message: string): void;
}

/** A logger that says nothing: for the operators' tools, whose failures reach their caller through the call that fails. */
export const SILENT_LOGGER: RetryLogger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
