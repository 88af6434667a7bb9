#!/usr/bin/env bash
# npm test's test runs, after lint and typecheck: the unit tests, the e2e tests (scripts/test-e2e.sh: two at a time,
# then the serial ones alone) and the chaos tests (in band: they restart and alarm private nodes). Each runs whatever
# the ones before it returned, so that one run reports every failure; the exit code is the first failure's.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jest() { node --experimental-vm-modules --no-warnings=ExperimentalWarning node_modules/jest/bin/jest.js "$@"; }
rc=0
note() { if ((rc == 0)); then rc=$1; fi; }
jest --maxWorkers="${UNIT_WORKERS:-2}" --selectProjects unit || note $?
bash scripts/test-e2e.sh || note $?
jest --runInBand --selectProjects chaos || note $?
exit "$rc"
