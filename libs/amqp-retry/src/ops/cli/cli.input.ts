import { amqpUrlProblem } from '../../core/config/broker-urls.reader.js';
import { maskUrl } from '../../core/text/credentials.mask.js';
import { printable } from '../../core/text/printable.js';

export { printable };
import { CliUsageError } from '../../errors/cli-usage.error.js';
import type { ParkedFilter, ParkedMessagesOptions } from '../../core/parking/parked-messages.types.js';

type ParkedScopeOptions = Pick<ParkedMessagesOptions, 'queues' | 'application' | 'wholeVhost'>;

/** Exit codes of `amqp-retry`, for scripts. */
export const EXIT = {
  /** Done. */
  ok: 0,
  /** Could not do it: connection refused, broker error, a parking queue missing, a purge the operator declined. */
  error: 1,
  /** The command line is wrong (unknown option, bad date, a purge without --yes when stdin is not a terminal). */
  usage: 2,
  /** The selection matched no message. */
  nothingMatched: 3,
  /** A replay left some matched messages parked (their queue is unknown or missing); the others were replayed. */
  partial: 4,
} as const;

/**
 * What `CliIo.out` throws once stdout failed. Its reader gone (EPIPE: `amqp-retry parked export | head -1`), the
 * command stops where it is and the CLI ends quietly with EXIT.ok, as a pipe's writer does when its reader took what it
 * wanted; any other failure (a full disk) is an error.
 */
export class OutputClosedError extends Error {
  readonly readerGone: boolean;

  constructor(failure: NodeJS.ErrnoException) {
    super(`could not write to stdout: ${failure.message}`);
    this.name = 'OutputClosedError';
    this.readerGone = failure.code === 'EPIPE';
  }
}

/** The filter options as commander hands them over (strings). */
export type FilterFlags = Partial<Record<'queue' | 'reason' | 'error' | 'since' | 'until' | 'text', string>>;

function readTime(option: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(/^\d+$/.test(value) ? Number(value) : value);
  if (Number.isNaN(date.getTime()))
    throw new CliUsageError(option, `is "${value}", not a time`, 'Give an ISO time such as 2026-01-31T12:00:00Z, or epoch milliseconds.');
  return date;
}

/** The ParkedFilter the flags describe; a bad time is a usage error naming the option. */
export function readFilter(flags: FilterFlags): ParkedFilter {
  const since = readTime('--since', flags.since);
  const until = readTime('--until', flags.until);
  if (since && until && since >= until) throw new CliUsageError('--since', 'is not before --until', 'Swap them, or widen the range.');
  const { queue, reason, error, text } = flags;
  return Object.fromEntries(Object.entries({ queue, reason, error, text, since, until }).filter(([, value]) => value !== undefined));
}

/** The options that say which queues a command looks at. */
export interface ScopeFlags {
  queue?: string;
  errorQueue?: string;
  app?: string;
  wholeVhost?: boolean;
}

/**
 * Which queues a command may look at, from its options: every application's (--whole-vhost), one application's
 * (--app; a --queue must then be one of its queues), the --queue named, or the --error-queue named (the command acts on
 * that parking queue alone). A command line that names none is a usage error: the CLI never reaches another team's
 * queues by default.
 */
export function readScope(flags: ScopeFlags): ParkedScopeOptions {
  const named = flags.queue !== undefined ? [{ queue: flags.queue, errorQueue: flags.errorQueue }] : [];
  if (flags.app !== undefined && flags.app.trim() === '')
    throw new CliUsageError('--app', 'is empty', 'Give the application name, as in RetryModule option application.');
  if (flags.wholeVhost) return { wholeVhost: true, queues: named };
  if (flags.app !== undefined) return { application: flags.app };
  if (named.length > 0) return { queues: named };
  if (flags.errorQueue !== undefined) return { wholeVhost: true };
  throw new CliUsageError(
    '--app',
    'is missing',
    "Name what to look at: --app <name> (the queues the application recorded), --queue <queue>, or --whole-vhost (every application's on the vhost).",
  );
}

/** True when the filter narrows beyond the queue: a replay or a purge of everything must say `--all`. */
export const narrows = (filter: ParkedFilter): boolean => Object.keys(filter).some((key) => key !== 'queue' && key !== 'errorQueue');

/** A whole number of at least `min` for `option`. */
export function readCount(option: string, value: string | undefined, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min) throw new CliUsageError(option, `is "${value}"`, `Give a whole number of at least ${min}.`);
  return Number(value);
}

/**
 * Checks `--url` (or AMQP_URL): one AMQP URL or a comma-separated list. A usage error names the option, the URL with
 * its password masked, and the fix (a password that is not percent-encoded is named as such).
 */
export function readUrlFlag(value: string | undefined, option: string): string | undefined {
  if (value === undefined) return undefined;
  for (const entry of value.split(',').map((url) => url.trim())) {
    if (entry === '') continue;
    const wrong = amqpUrlProblem(entry);
    if (wrong) {
      throw new CliUsageError(
        option,
        `is "${maskUrl(entry)}", which ${wrong.problem}`,
        wrong.fix ?? 'Use an AMQP URL such as amqp://user:password@host:5672/vhost.',
      );
    }
  }
  return value;
}

/** A progress bar only for a person watching: stderr is a terminal and the output is not JSON. */
export const wantsProgress = (stderrIsTTY: boolean | undefined, json: boolean): boolean => stderrIsTTY === true && !json;

/** Cuts a one-line text to `max` characters. */
export const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`);
