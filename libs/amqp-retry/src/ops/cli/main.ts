#!/usr/bin/env node
import { runCli } from './cli.program.js';
import { terminalIo } from './terminal.io.js';

// The `amqp-retry` bin (no top-level await: the CommonJS build compiles this file too). The exit code is set, not
// forced, so that stdout is flushed when piped.
void terminalIo()
  .then((io) => runCli(process.argv.slice(2), io))
  .then((code) => {
    process.exitCode = code;
  });
