import type { LoggerService } from '@nestjs/common';

/** Keeps what the library logs (`app.useLogger(logger)`), with the time of each line, to count and time lines. */
export class RecordingLogger implements LoggerService {
  readonly entries: { at: number; line: string }[] = [];
  private add = (level: string) => (message: unknown) => void this.entries.push({ at: Date.now(), line: `${level} ${String(message)}` });
  log = this.add('log');
  error = this.add('error');
  warn = this.add('warn');
  debug = this.add('debug');
  verbose = this.add('verbose');

  get lines(): string[] {
    return this.entries.map(({ line }) => line);
  }

  matching = (pattern: RegExp) => this.entries.filter(({ line }) => pattern.test(line));
  count = (pattern: RegExp) => this.matching(pattern).length;
}
