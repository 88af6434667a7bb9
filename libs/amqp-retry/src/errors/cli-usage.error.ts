/** A command line the `amqp-retry` CLI cannot run: names the option and the fix. Exits with code 2. */
export class CliUsageError extends Error {
  constructor(
    readonly option: string,
    problem: string,
    fix: string,
  ) {
    super(`${option} ${problem}. ${fix}`);
    this.name = 'CliUsageError';
  }
}
