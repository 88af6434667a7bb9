// A Jest reporter that names what is still open when a run ends: sockets (with their peer), servers (with their
// port) and child processes. The e2e tests run in band, so a socket or a server that one test file left open keeps
// the Jest process alive after the last test; without a name, that shows only as a CI step that never returns
// ("Jest did not exit one second after the test run has completed"). jest.config.js sets `forceExit` so that such a
// leak cannot hang CI, and this reporter prints it so that it is still seen and fixed. It waits a moment first: a
// connection closed by the last afterAll can still be finishing its close handshake.
const GRACE_MS = 2_000;

/** The handles that keep a process alive and that a test can leak, described for a reader. */
function openHandles() {
  // process._getActiveHandles is not documented, but it is the only way to see a socket's peer; guarded.
  const handles = typeof process._getActiveHandles === 'function' ? process._getActiveHandles() : [];
  const described = [];
  for (const handle of handles) {
    const kind = handle?.constructor?.name ?? typeof handle;
    if (kind === 'Socket') {
      if (handle === process.stdout || handle === process.stderr || handle === process.stdin || handle.destroyed) continue;
      if (handle.remotePort === undefined) continue; // a pipe (a child's stdio), reported with its child
      described.push(`socket to ${handle.remoteAddress}:${handle.remotePort} (local port ${handle.localPort})`);
    } else if (kind === 'Server') {
      const address = typeof handle.address === 'function' ? handle.address() : null;
      described.push(`server on ${typeof address === 'object' && address ? address.port : String(address)}`);
    } else if (kind === 'ChildProcess') {
      described.push(`child process ${handle.pid}: ${(handle.spawnargs ?? []).join(' ').slice(0, 160)}`);
    }
  }
  return described;
}

export default class OpenHandlesReporter {
  async onRunComplete() {
    // Not unref'd: with nothing else left open, an unref'd timer let the process end right here, before Jest printed
    // its summary and set the exit code (a run with failed tests exited 0).
    await new Promise((resolve) => setTimeout(resolve, GRACE_MS));
    const open = openHandles();
    if (open.length === 0) return;
    const lines = open.map((line) => `  - ${line}`).join('\n');
    process.stderr.write(`\nopen-handles reporter: ${open.length} handle(s) still open ${GRACE_MS} ms after the run; a test did not close them:\n${lines}\n`);
  }
}
