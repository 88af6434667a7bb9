#!/usr/bin/env node
import { runCli } from './cli.js';
import { terminalIo } from './terminal-io.js';

// The `amqp-retry` bin. The exit code is set, not forced, so that stdout is flushed when piped.
process.exitCode = await runCli(process.argv.slice(2), await terminalIo());
