import { CliUsageError } from '../../errors/cli-usage.error.js';
import { ParkedScopeError } from '../../errors/parked-scope.error.js';
import { NotAParkingQueueError } from '../../errors/not-a-parking-queue.error.js';
import { errorMessage } from '../../core/text/error-message.format.js';
import { ParkedMessages } from '../parked-messages.service.js';
import { givenPasswords, maskCredentials, maskGivenPasswords } from '../../core/text/credentials.mask.js';
import { EXIT, OutputClosedError, printable, readFilter, readScope, readUrlFlag, type ScopeFlags } from './cli.input.js';
import { QueueControl } from '../queue-control.client.js';
import { queueControlCommand, type QueueControlFlags } from './queue.commands.js';
import {
  assertKnownQueue,
  exportCommand,
  listCommand,
  purgeCommand,
  queuesCommand,
  replayCommand,
  showCommand,
  type CliIo,
  type CommonFlags,
  type SelectionFlags,
} from './parked.commands.js';

type Commander = typeof import('commander');

/**
 * Runs `amqp-retry <args>` and returns the exit code (see EXIT). Never throws: errors are printed, credentials masked.
 */
export async function runCli(args: readonly string[], given: CliIo): Promise<number> {
  const io = maskedIo(given, [...urlFlags(args), process.env.AMQP_URL].flatMap(givenPasswords));
  // commander is an optional peer dependency: only the CLI needs it.
  const commander: Commander | undefined = await import('commander').catch(() => undefined);
  if (!commander) {
    io.err('amqp-retry needs the package "commander" (an optional peer dependency of nestjs-amqp-retry): npm install commander');
    return EXIT.error;
  }
  let code: number = EXIT.ok;
  let parked: ParkedMessages | undefined;
  const connect = async (flags: ConnectFlags) => {
    // What the command line names is all the CLI looks at: a usage error before any connection when it names nothing.
    parked = await ParkedMessages.connect({ url: brokerUrl(flags), ...readScope(flags) });
    return parked;
  };
  const program = buildProgram(commander, io, connect, (result) => (code = result));
  try {
    await program.parseAsync([...args], { from: 'user' });
  } catch (error) {
    code = exitCodeOf(commander, error, io);
  } finally {
    await parked?.close();
  }
  return code;
}

/** The values of `--url` on the command line (`--url <url>` or `--url=<url>`), before commander reads them. */
const urlFlags = (args: readonly string[]): string[] =>
  args.flatMap((arg, i) => (arg.startsWith('--url=') ? [arg.slice('--url='.length)] : arg === '--url' && i + 1 < args.length ? [args[i + 1]] : []));

/**
 * The CLI's output, never holding the password of a broker URL it was given (--url, AMQP_URL). stdout carries message
 * data (export, --json: bodies, headers) that must come out as it is, so only those passwords are masked there, where
 * they stand as a URL's; stderr (errors, warnings, what the CLI says of its connection) is masked of any credentials.
 */
function maskedIo(io: CliIo, passwords: readonly string[]): CliIo {
  return {
    ...io,
    out: (text) => io.out(maskGivenPasswords(text, passwords)),
    err: (text) => io.err(maskCredentials(maskGivenPasswords(text, passwords))),
    confirm: (question) => io.confirm(maskCredentials(maskGivenPasswords(question, passwords))),
    progress: (label) => io.progress(maskCredentials(maskGivenPasswords(label, passwords))),
  };
}

function exitCodeOf(commander: Commander, error: unknown, io: CliIo): number {
  // commander printed its message already; help and --version end with code 0
  if (error instanceof commander.CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  if (error instanceof OutputClosedError && error.readerGone) return EXIT.ok; // its reader took what it wanted
  const usage = usageProblem(error);
  io.err(`error: ${usage ?? maskCredentials(errorMessage(error))}`);
  return usage === undefined ? EXIT.error : EXIT.usage;
}

/** What is wrong with the command line, when the error says so (EXIT.usage). */
function usageProblem(error: unknown): string | undefined {
  if (error instanceof CliUsageError) return maskCredentials(error.message);
  if (error instanceof NotAParkingQueueError) return `${printable(error.message)}.`;
  if (error instanceof ParkedScopeError) {
    return (
      `"${printable(error.subject)}" is not a queue of what this command looks at (${printable(error.scope)}); nothing was read or changed. ` +
      'Name the queue with --queue, its application with --app, or look at every application with --whole-vhost.'
    );
  }
  return undefined;
}

type ConnectFlags = ScopeFlags & { url?: string };

/** --url, else AMQP_URL, read as the module reads it: a password that is not percent-encoded is named, masked. */
const brokerUrl = (flags: { url?: string }) =>
  flags.url !== undefined ? readUrlFlag(flags.url, '--url') : readUrlFlag(process.env.AMQP_URL, 'AMQP_URL');

function buildProgram(commander: Commander, io: CliIo, connect: (flags: ConnectFlags) => Promise<ParkedMessages>, done: (code: number) => void) {
  const { Command } = commander;
  const program = new Command('amqp-retry')
    .description('Inspect and replay the messages parked by nestjs-amqp-retry handlers; pause and resume handler queues')
    .option('--url <url>', 'RabbitMQ URL (default: AMQP_URL, else amqp://guest:guest@localhost:5672)')
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out(text.trimEnd()), writeErr: (text) => io.err(text.trimEnd()) })
    .showHelpAfterError('(run with --help for usage)');

  const parkedCommand = program.command('parked').description('Parked messages: list, show, replay, purge, export');

  const withScope = (command: InstanceType<Commander['Command']>) =>
    command
      .option('--app <name>', 'the handler queues the application recorded (RetryModule option application)')
      .option('--whole-vhost', "every application's handler queues recorded on the vhost");
  const withFilters = (command: InstanceType<Commander['Command']>) =>
    withScope(command)
      .option('--queue <queue>', 'handler queue (its parking queue as recorded by the handler, else <queue>.error)')
      .option('--error-queue <queue>', 'the parking queue itself')
      .option('--reason <reason>', 'park reason: exhausted, non-retryable, malformed, redelivery-limit, expired, maxlen, undeliverable, no-handler')
      .option('--error <text>', 'substring of the exception message (case-insensitive)')
      .option('--since <time>', 'parked at or after (ISO time or epoch ms)')
      .option('--until <time>', 'parked before (ISO time or epoch ms)')
      .option('--text <text>', 'substring of the body (case-insensitive)')
      .option('--json', 'print JSON');
  const selecting = (command: InstanceType<Commander['Command']>) =>
    withFilters(command)
      .option('--id <id...>', 'only these message ids')
      .option('--all', 'every parked message of the queue (needed when no --id and no filter is given)')
      .option('--dry-run', 'count what would be done, change nothing');
  const run =
    <F extends CommonFlags>(action: (parked: ParkedMessages, flags: F, ...rest: string[]) => Promise<number>) =>
    async (...params: unknown[]) => {
      const command = params.at(-1) as InstanceType<Commander['Command']>;
      const flags = command.optsWithGlobals<F & { url?: string }>();
      const positional = params.slice(0, -2) as string[];
      readFilter(flags); // a bad date is a usage error before any connection
      const parked = await connect(flags);
      // With --app, a queue of another application's is refused by the scope, with its own message.
      if (flags.queue !== undefined && flags.app === undefined) await assertKnownQueue(parked, flags.queue);
      done(await action(parked, flags, ...positional));
    };

  withScope(
    parkedCommand
      .command('queues')
      .description('the handler queues named (--queue, --app, --whole-vhost), with the depths of their queues, tiers and parking queues'),
  )
    .option('--queue <queue>', 'handler queue')
    .option('--json', 'print JSON')
    .action(run((parked, flags) => queuesCommand(parked, flags, io)));
  withFilters(parkedCommand.command('list').description('count by reason and error, and list the matching messages'))
    .option('--offset <n>', 'skip this many', '0')
    .option('--limit <n>', 'show at most this many', '50')
    .action(run((parked, flags) => listCommand(parked, flags, io)));
  withScope(parkedCommand.command('show <id>').description('one message: body, properties, every header, the death history'))
    .option('--queue <queue>', 'handler queue')
    .option('--error-queue <queue>', 'the parking queue itself')
    .option('--json', 'print JSON')
    .action(run((parked, flags, id) => showCommand(parked, id, flags, io)));
  selecting(parkedCommand.command('replay').description('send the selected messages back to the queue they failed in, with fresh attempts')).action(
    run<SelectionFlags>((parked, flags) => replayCommand(parked, flags, io)),
  );
  selecting(parkedCommand.command('purge').description('delete the selected messages (asks first unless --yes)'))
    .option('--yes', 'do not ask for confirmation')
    .action(run<SelectionFlags>((parked, flags) => purgeCommand(parked, flags, io)));
  withFilters(parkedCommand.command('export').description('print the matching messages as JSON lines, leaving them parked')).action(
    run((parked, flags) => exportCommand(parked, flags, io)),
  );
  for (const kind of ['pause', 'resume'] as const) {
    const command = program
      .command(kind)
      .description(
        kind === 'pause'
          ? 'pause a handler queue in every running instance that consumes it: its messages wait in the broker (the kill switch)'
          : 'resume a paused handler queue in every running instance that consumes it',
      )
      .requiredOption('--queue <queue>', 'the handler queue')
      .option('--by <who>', 'who, shown in logs and on the page (default: user@host)');
    if (kind === 'pause') command.option('--reason <text>', 'why, shown in logs and on the page');
    command
      .option('--wait <ms>', 'how long to wait for the instances to answer', '2000')
      .option('--json', 'print JSON')
      .action(async (_flags: unknown, cmd: InstanceType<Commander['Command']>) => {
        const flags = cmd.optsWithGlobals<QueueControlFlags & { url?: string }>();
        done(await queueControlCommand(kind, QueueControl.create({ url: brokerUrl(flags) }), flags, io));
      });
  }
  return program;
}
