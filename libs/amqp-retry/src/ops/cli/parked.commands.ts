import { CliUsageError } from '../../errors/cli-usage.error.js';
import { ParkedCountChangedError } from '../../errors/parked-count-changed.error.js';
import type { ParkedMessages } from '../parked-messages.service.js';
import type { OperationOptions, ParkedFilter, ParkedMessageView, ParkedSelection, PurgeResult } from '../../core/parking/parked-messages.types.js';
import { ParkedHeader } from '../../core/headers/header.names.js';
import { someIds } from '../parked-selection.js';
import { formatPage, formatQueues, formatSummary, formatView } from './cli.format.js';
import { EXIT, narrows, printable, readCount, readFilter, wantsProgress, type FilterFlags, type ScopeFlags } from './cli.input.js';

/** A progress reporter: called with each step, stopped at the end. */
export type Progress = NonNullable<OperationOptions['onProgress']> & { stop(): void };

/** What the commands read and write: the process in the CLI, buffers in tests. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  stdinIsTTY: boolean;
  stderrIsTTY: boolean;
  /** Asks a yes/no question on the terminal. */
  confirm(question: string): Promise<boolean>;
  /** A progress reporter, or undefined when none should be shown (stderr is not a terminal). */
  progress(label: string): Progress | undefined;
}

export interface CommonFlags extends FilterFlags, ScopeFlags {
  json?: boolean;
}

export interface SelectionFlags extends CommonFlags {
  id?: string[];
  all?: boolean;
  dryRun?: boolean;
  yes?: boolean;
}

const json = (value: unknown) => JSON.stringify(value, null, 2);

/** The parking queue the flags name: --error-queue, else the one recorded for --queue. */
async function errorQueueOf(parked: ParkedMessages, flags: CommonFlags): Promise<string> {
  if (flags.errorQueue !== undefined) return flags.errorQueue;
  if (flags.queue !== undefined) return parked.errorQueueOf(flags.queue);
  throw new CliUsageError('--queue', 'is missing', 'Name the handler queue (--queue orders) or its parking queue (--error-queue orders.error).');
}

/**
 * A `--queue` that names no handler queue on the broker (no record, and neither it nor its parking queue exists) is a
 * typing mistake, not an empty selection: "0 parked" would send the operator looking for messages that were never
 * there. A usage error instead, naming how to see the queues there are.
 */
export async function assertKnownQueue(parked: ParkedMessages, queue: string): Promise<void> {
  const states = await parked.queues();
  if (states.some((state) => state.queue === queue)) return;
  const others = states.slice(0, 5).map((state) => `"${printable(state.queue)}"`);
  throw new CliUsageError(
    '--queue',
    `is "${printable(queue)}", which is not a handler queue on this broker (no handler recorded it, and neither it nor its parking queue exists)`,
    (others.length > 0 ? `Handler queues in view: ${others.join(', ')}${states.length > 5 ? ', ...' : ''}. ` : '') +
      'List them with: amqp-retry parked queues --app <name> (or --whole-vhost).',
  );
}

/** The filter of a replay or a purge; acting on every message of a queue must be asked for with --all. */
function selectionFilter(flags: SelectionFlags, verb: string): { filter: ParkedFilter; ids?: string[] } {
  // The queue chooses the parking queue and, within it, its own messages: another queue may park there too.
  const filter = readFilter(flags);
  const ids = flags.id && flags.id.length > 0 ? flags.id : undefined;
  if (!ids && !narrows(filter) && !flags.all)
    throw new CliUsageError('--all', 'is missing', `To ${verb} every parked message of the queue, say --all; else select with --id or a filter.`);
  return { filter, ids };
}

/**
 * The ids of the messages of the parking queue a `--queue` selection left out, by why (see leftOut): `foreign`, put
 * there otherwise than by amqp-retry (no x-parked-reason), no handler queue's, never acted on with --queue;
 * `unreplayable`, their x-original-queue names a queue no replay goes to (ParkedMessageView.unreplayable); `unnamed`,
 * parked without x-original-queue in a parking queue that is not that queue's own alone (see queueOfUnnamed).
 */
type LeftOut = Record<'foreign' | 'unreplayable' | 'unnamed', string[]>;

/**
 * The ids of the messages of the parking queue a `--queue` selection left out because no queue of what the command
 * looks at is theirs, matching the rest of the selection: said after a replay or a purge, so that its count never
 * hides them.
 */
async function leftOut(parked: ParkedMessages, selection: ParkedSelection): Promise<LeftOut> {
  const left: LeftOut = { foreign: [], unreplayable: [], unnamed: [] };
  if (selection.filter?.queue === undefined) return left;
  for await (const line of parked.export({ ...selection, filter: { ...selection.filter, queue: '' } })) {
    const view = JSON.parse(line) as ParkedMessageView;
    const kind = view.headers[ParkedHeader.reason] === undefined ? 'foreign' : view.unreplayable !== undefined ? 'unreplayable' : 'unnamed';
    left[kind].push(view.id);
  }
  return left;
}

/** The ids a line on what a command left out names: the first 10. */
const shownIds = (ids: readonly string[]) => someIds(ids, 10, (id) => printable(id));

function sayLeftOut(io: CliIo, left: LeftOut, errorQueue: string, action: 'replay' | 'purge', dryRun: boolean): void {
  const done = dryRun ? 'counted' : action === 'replay' ? 'replayed' : 'purged';
  const where = `"${printable(errorQueue)}"`;
  if (left.foreign.length > 0)
    io.err(
      `${left.foreign.length} other matching message(s) in ${where} were not parked by amqp-retry (no x-parked-reason header) and were left as they are: ${shownIds(left.foreign)}.`,
    );
  if (left.unreplayable.length > 0)
    io.err(
      `${left.unreplayable.length} other matching message(s) in ${where} name a queue no replay goes to (x-original-queue: not a handler queue this command looks at, or a queue of amqp-retry) and were not ${done}: ${shownIds(left.unreplayable)}; ` +
        `see one with: amqp-retry parked show <id> --error-queue ${where}.`,
    );
  if (left.unnamed.length > 0)
    io.err(
      `${left.unnamed.length} other matching message(s) in ${where} name no queue they failed in (parked without x-original-queue) and were not ${done}; ` +
        `to ${action} them, select them by --id with --error-queue ${where} and no --queue.`,
    );
}

/** Runs `run` with a progress bar for a person at a terminal (io decides), never beside --json output. */
function withProgress<T>(io: CliIo, json: boolean | undefined, label: string, run: (onProgress: Progress) => Promise<T>): Promise<T> {
  const onProgress =
    (wantsProgress(io.stderrIsTTY, json === true) && io.progress(label)) || Object.assign(() => undefined, { stop: () => undefined });
  return run(onProgress).finally(() => onProgress.stop());
}

export async function queuesCommand(parked: ParkedMessages, flags: CommonFlags, io: CliIo): Promise<number> {
  const states = await parked.queues();
  io.out(flags.json ? json(states) : formatQueues(states));
  return states.length === 0 ? EXIT.nothingMatched : EXIT.ok;
}

export async function listCommand(parked: ParkedMessages, flags: CommonFlags & { offset?: string; limit?: string }, io: CliIo): Promise<number> {
  // --error-queue reads that parking queue alone (with --queue too: its messages that failed in that queue).
  const filter = { ...readFilter(flags), ...(flags.errorQueue !== undefined && { errorQueue: flags.errorQueue }) };
  const offset = readCount('--offset', flags.offset, 0);
  const limit = readCount('--limit', flags.limit, 50, 1);
  const summary = await parked.summary(filter);
  const page = await parked.list(filter, { offset, limit });
  io.out(flags.json ? json({ summary, ...page }) : `${formatSummary(summary)}\n\n${formatPage(page, offset)}`);
  return page.total === 0 ? EXIT.nothingMatched : EXIT.ok;
}

export async function showCommand(parked: ParkedMessages, id: string, flags: CommonFlags, io: CliIo): Promise<number> {
  const errorQueue = await errorQueueOf(parked, flags);
  const view = await parked.show(errorQueue, id);
  if (!view) {
    io.err(`No parked message "${printable(id)}" in "${printable(errorQueue)}".`);
    return EXIT.nothingMatched;
  }
  io.out(flags.json ? json(view) : formatView(view));
  return EXIT.ok;
}

export async function replayCommand(parked: ParkedMessages, flags: SelectionFlags, io: CliIo): Promise<number> {
  const errorQueue = await errorQueueOf(parked, flags);
  const selection = { errorQueue, ...selectionFilter(flags, 'replay') };
  const result = await withProgress(io, flags.json, 'replay', (onProgress) => parked.replay(selection, { dryRun: flags.dryRun, onProgress }));
  const text = result.dryRun
    ? `Would replay ${result.matched} message(s) from "${printable(errorQueue)}" (dry run).`
    : `Replayed ${result.replayed} of ${result.matched} matching message(s) from "${printable(errorQueue)}".`;
  io.out(flags.json ? json(result) : text);
  if (!flags.json) for (const failure of result.failed) io.err(`Left parked ${printable(failure.id)}: ${printable(failure.error)}`);
  sayLeftOut(io, await leftOut(parked, selection), errorQueue, 'replay', result.dryRun);
  if (result.matched === 0) return EXIT.nothingMatched;
  return result.failed.length > 0 ? EXIT.partial : EXIT.ok;
}

export async function purgeCommand(parked: ParkedMessages, flags: SelectionFlags, io: CliIo): Promise<number> {
  const errorQueue = await errorQueueOf(parked, flags);
  const selection = { errorQueue, ...selectionFilter(flags, 'purge') };
  const purge = async (expected?: number) => {
    const result = await withProgress(io, flags.json, 'purge', (onProgress) =>
      parked.purge(selection, { dryRun: flags.dryRun, expected, onProgress }),
    );
    const code = report(io, flags, result, errorQueue);
    sayLeftOut(io, await leftOut(parked, selection), errorQueue, 'purge', result.dryRun);
    return code;
  };
  if (flags.dryRun || flags.yes) return purge();
  if (!io.stdinIsTTY)
    throw new CliUsageError('--yes', 'is missing', 'A purge cannot be undone; stdin is not a terminal to confirm it on, so say --yes.');
  // The purge acts on the count confirmed: a message parked after the question is not purged unseen (ParkedCountChangedError).
  let { matched } = await parked.purge(selection, { dryRun: true });
  for (;;) {
    if (matched === 0) return report(io, flags, { matched: 0, purged: 0, dryRun: false }, errorQueue);
    if (!(await io.confirm(`Purge ${matched} parked message(s) from "${printable(errorQueue)}"? This cannot be undone. [y/N] `))) {
      io.err('Nothing purged.');
      return EXIT.error;
    }
    try {
      return await purge(matched);
    } catch (error) {
      if (!(error instanceof ParkedCountChangedError)) throw error;
      io.err(`${error.matched} message(s) match now, not the ${matched} confirmed: nothing was purged.`);
      matched = error.matched;
    }
  }
}

function report(io: CliIo, flags: SelectionFlags, result: PurgeResult, errorQueue: string): number {
  const text = result.dryRun
    ? `Would purge ${result.matched} message(s) from "${printable(errorQueue)}" (dry run).`
    : `Purged ${result.purged} message(s) from "${printable(errorQueue)}".`;
  io.out(flags.json ? json(result) : text);
  return result.matched === 0 ? EXIT.nothingMatched : EXIT.ok;
}

/** JSON lines on stdout, of one parking queue or (no --queue) of every one in scope (--app, --whole-vhost). */
export async function exportCommand(parked: ParkedMessages, flags: CommonFlags, io: CliIo): Promise<number> {
  // With --queue, its messages only: another queue may park in the same parking queue.
  const filter = readFilter(flags);
  const errorQueues =
    flags.errorQueue !== undefined || flags.queue !== undefined
      ? [await errorQueueOf(parked, flags)]
      : // Every parking queue that exists: its depth counts ready messages only, 0 while another walk holds them.
        [...new Set((await parked.queues()).filter((q) => q.parked >= 0).map((q) => q.errorQueue))];
  let count = 0;
  for (const errorQueue of errorQueues) {
    await withProgress(io, false, `export ${errorQueue}`, async (onProgress) => {
      for await (const line of parked.export({ errorQueue, filter }, { onProgress })) {
        io.out(line);
        count++;
      }
    });
  }
  return count === 0 ? EXIT.nothingMatched : EXIT.ok;
}
