import { createInterface } from 'node:readline/promises';
import type { CliIo, Progress } from './parked.commands.js';
import { OutputClosedError } from './cli.input.js';

/**
 * The process's streams, written as given (runCli masks what it writes about its connection). The progress bar (cli-progress, an optional peer
 * dependency loaded only here) is drawn on stderr when stderr is a terminal; without the package there is no bar.
 */
export async function terminalIo(): Promise<CliIo> {
  const stderrIsTTY = process.stderr.isTTY === true;
  const progressBars = stderrIsTTY ? await import('cli-progress').catch(() => undefined) : undefined;
  // A reader that stops reading (`| head -1`) fails the writes after with EPIPE, emitted on stdout: unheard, it would
  // end the process with a stack trace. Heard, the next line written stops the command (OutputClosedError).
  let outFailure: NodeJS.ErrnoException | undefined;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => void (outFailure ??= error));
  return {
    out: (text) => {
      if (outFailure) throw new OutputClosedError(outFailure);
      process.stdout.write(`${text}\n`);
    },
    err: (text) => void process.stderr.write(`${text}\n`),
    stdinIsTTY: process.stdin.isTTY === true,
    stderrIsTTY,
    async confirm(question) {
      const prompt = createInterface({ input: process.stdin, output: process.stderr });
      try {
        return /^y(es)?$/i.test((await prompt.question(question)).trim());
      } finally {
        prompt.close();
      }
    },
    progress(label) {
      if (!progressBars) return undefined;
      const bar = new progressBars.SingleBar(
        { format: `${label} [{bar}] {value}/{total} {percentage}% ETA {eta_formatted}`, stream: process.stderr, clearOnComplete: true },
        progressBars.Presets.shades_classic,
      );
      let started = false;
      const report = (done: number, total: number) => {
        if (!started) bar.start(total, 0);
        started = true;
        bar.update(done);
      };
      return Object.assign(report, { stop: () => started && bar.stop() }) as Progress;
    },
  };
}
