import { hostname, userInfo } from 'node:os';
import { readPauseBy } from '../../core/breaker/queue.state.js';
import { CliUsageError } from '../../errors/cli-usage.error.js';
import type { ControlOutcome, ControlReply, QueueControl } from '../queue-control.client.js';
import { EXIT, printable, readCount } from './cli.input.js';
import type { CliIo } from './parked.commands.js';

export interface QueueControlFlags {
  queue: string;
  by?: string;
  reason?: string;
  wait?: string;
  json?: boolean;
}

/** Who runs the CLI, for `--by`'s default: user@host. */
function operator(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return `unknown user@${hostname()}`;
  }
}

/** Reads the flags before any connection: who (default user@host), why, and how long to wait for answers. */
export function readControlFlags(kind: 'pause' | 'resume', flags: QueueControlFlags): { by: string; reason?: string; waitMs: number } {
  if (flags.queue.trim() === '') throw new CliUsageError('--queue', 'is empty', 'Name the handler queue to ' + kind + ', e.g. --queue orders.');
  const who = readPauseBy(flags.by ?? operator(), kind === 'pause' ? flags.reason : undefined);
  if ('problem' in who)
    throw new CliUsageError(who.problem.startsWith('by') ? '--by' : '--reason', who.problem.replace(/^\w+ /, ''), 'Give printable text.');
  return { ...who, waitMs: readCount('--wait', flags.wait, 2_000, 100) };
}

/** `amqp-retry pause|resume --queue Q`: tells every running instance consuming Q, and prints their answers. */
export async function queueControlCommand(kind: 'pause' | 'resume', control: QueueControl, flags: QueueControlFlags, io: CliIo): Promise<number> {
  const { by, reason, waitMs } = readControlFlags(kind, flags);
  const outcome: ControlOutcome =
    kind === 'pause' ? await control.pause(flags.queue, { by, reason }, waitMs) : await control.resume(flags.queue, { by }, waitMs);
  if (flags.json) io.out(JSON.stringify(outcome, null, 2));
  if (!outcome.routed) {
    io.err(`error: no running application consumes "${printable(flags.queue)}" (or none runs a version that can be paused); nothing was changed`);
    return EXIT.error;
  }
  if (outcome.replies.length === 0) {
    io.err(
      `error: the command reached "${printable(flags.queue)}" but no instance answered within ${waitMs} ms; check its state on the page or in its logs`,
    );
    return EXIT.error;
  }
  if (!flags.json) for (const reply of outcome.replies) io.out(describeReply(reply));
  return outcome.replies.some((r) => r.error !== undefined) ? EXIT.error : EXIT.ok;
}

function describeReply({ instance, status, error }: ControlReply): string {
  if (error !== undefined || !status) return `${printable(instance)}: not done: ${printable(error ?? 'no state in the answer')}`;
  const paused = status.paused
    ? ` by ${status.paused.by} since ${status.paused.since}${status.paused.reason ? ` (${status.paused.reason})` : ''}`
    : '';
  const circuit = status.circuit && status.state !== status.circuit ? `; its circuit is ${status.circuit}` : '';
  return printable(`${instance}: "${status.queue}" is ${status.state}${paused}${circuit}`);
}
