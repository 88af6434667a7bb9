#!/usr/bin/env bash
# The e2e suite in two runs: the files that may run beside another (Jest project e2e) on E2E_WORKERS workers (default
# 2), then the files that must run alone (project e2e-serial, jest.config.js's SERIAL_E2E) in band. Every argument
# (test paths, Jest options) goes to both runs. With test paths, a run that finds none of them passes, but paths
# that name no e2e test at all fail the script. Both runs happen whatever the first returned; the exit code is the
# first failure's.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jest() { node --experimental-vm-modules --no-warnings=ExperimentalWarning node_modules/jest/bin/jest.js "$@"; }
if (($# > 0)); then
  # Jest's arguments first: --selectProjects takes every word after it, test paths included.
  found="$(jest --listTests "$@" --selectProjects e2e e2e-serial 2>/dev/null | grep -c 'e2e-spec\.ts$' || true)"
  if ((found == 0)); then
    echo "test-e2e.sh: no e2e test matches $*" >&2
    exit 1
  fi
  set -- --passWithNoTests "$@"
fi
rc=0
jest --maxWorkers="${E2E_WORKERS:-2}" "$@" --selectProjects e2e || rc=$?
serial_rc=0
jest --runInBand "$@" --selectProjects e2e-serial || serial_rc=$?
if ((rc == 0)); then rc=$serial_rc; fi
exit "$rc"
