#!/usr/bin/env bash
# npm run test:consumers (or bash test/consumers/run.sh): packs the library as users get it (npm pack), checks the tarball (test/consumers/check-package.mjs), and
# installs it into each fixture application here with a plain `npm install <tarball>`. Each fixture then builds with
# its own tsc settings and runs its own test against the broker (test/consumers/README.md lists them).
# A fixture is copied outside the repository first, so that Node and TypeScript can find nothing in the workspace's
# node_modules: every package it loads is its own. Its dependencies come from its committed lock file (npm ci, skipped
# when the copy already holds that lock file's install). The fixture `examples` is the repository's examples/ folder
# (examples/README.md): one Nest 12 app per sub-folder, built together, each run once with EXAMPLE_SMOKE=1, which
# runs its flow against the broker, checks the outcome and exits. CONSUMER_FIXTURES="nest11-cjs examples" runs a subset.
# Every fixture runs even after one fails; the exit code is the first failure's.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HERE="$ROOT/test/consumers"
WORK="${CONSUMERS_WORK_DIR:-${TMPDIR:-/tmp}/nestjs-amqp-retry-consumers}"
read -r -a fixtures <<<"${CONSUMER_FIXTURES:-nest11-cjs nest12-esm nest12-cjs nest10-cjs examples}"
npm_quiet=(--no-audit --no-fund --loglevel=error)

bash "$ROOT/scripts/ensure-broker.sh" </dev/null
# examples/outbox-typeorm needs PostgreSQL (POSTGRES_URL, as for the e2e tests; given to the examples as DATABASE_URL)
if [[ " ${fixtures[*]} " == *" examples "* ]]; then bash "$ROOT/scripts/ensure-services.sh" </dev/null; fi
examples_database="${DATABASE_URL:-${POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}}"
mkdir -p "$WORK"
rm -f "$WORK"/nestjs-amqp-retry-*.tgz
# prepack builds both module systems afresh
tarball_name="$(cd "$ROOT" && npm pack -w libs/amqp-retry --pack-destination "$WORK" "${npm_quiet[@]}" | tail -n 1)"
tarball="$WORK/$tarball_name"
echo "consumers: packed $tarball ($(du -k "$tarball" | cut -f1) kB)"

# shellcheck source=lib/tally.sh
source "$ROOT/scripts/lib/tally.sh"
tally_run consumers "the tarball's contents" node "$HERE/check-package.mjs" "$tarball"
step() { # step <fixture> <what> <command...>: runs one step in the fixture's copy, timed
  local fixture="$1" what="$2" start=$SECONDS
  shift 2
  if (cd "$WORK/$fixture" && "$@") </dev/null; then
    echo "consumers: $fixture: $what ok ($((SECONDS - start))s)"
  else
    local step_rc=$?
    echo "consumers: $fixture: $what FAILED with exit code $step_rc ($((SECONDS - start))s)"
    return "$step_rc"
  fi
}

run_fixture() {
  local fixture="$1" dir="$WORK/$1" source="$HERE/$1"
  local lock_hash example
  [[ "$fixture" != examples ]] || source="$ROOT/examples"
  if [[ ! -f "$source/package-lock.json" ]]; then
    echo "consumers: no fixture ${source#"$ROOT/"} with a package-lock.json"
    return 1
  fi
  lock_hash="$(sha256sum "$source/package-lock.json" | cut -d' ' -f1)"
  mkdir -p "$dir"
  # the fixture's own files, afresh (a checkout's examples/dist and examples/node_modules left out); node_modules
  # stays while the lock file is the same
  find "$dir" -mindepth 1 -maxdepth 1 ! -name node_modules ! -name .installed-lock -exec rm -rf {} +
  (cd "$source" && find . -mindepth 1 -maxdepth 1 ! -name node_modules ! -name dist -exec cp -R {} "$dir/" \;)
  if [[ "$fixture" != examples ]]; then
    mkdir -p "$dir/src/shared"
    cp "$HERE"/shared/*.ts "$dir/src/shared/"
  fi
  if [[ "$(cat "$dir/.installed-lock" 2>/dev/null)" != "$lock_hash" ]]; then
    step "$fixture" "npm ci" npm ci "${npm_quiet[@]}" || return
    echo "$lock_hash" >"$dir/.installed-lock"
  fi
  # a kept install may hold an earlier tarball of the same version: npm would keep it
  rm -rf "$dir/node_modules/nestjs-amqp-retry"
  # what a user types: no --legacy-peer-deps, no --force; npm checks the peer ranges against the app's Nest
  step "$fixture" "npm install $tarball_name" npm install --no-save "${npm_quiet[@]}" "$tarball" || return
  step "$fixture" "build (tsc)" npm run build --silent || return
  if grep -q '"typecheck:node16"' "$dir/package.json"; then
    step "$fixture" 'typecheck with "module": "node16"' npm run typecheck:node16 --silent || return
  fi
  if grep -q '"start"' "$dir/package.json"; then
    step "$fixture" "start (the compiled app under plain node)" npm start --silent || return
  fi
  if grep -q '"test"' "$dir/package.json"; then
    step "$fixture" "test" npm test --silent || return
  fi
  if [[ "$fixture" == examples ]]; then # each example runs even after one failed; the first failure's code is returned
    local examples_rc=0 main
    for main in "$dir"/*/main.ts; do
      example="$(basename "$(dirname "$main")")"
      step "$fixture" "$example (EXAMPLE_SMOKE=1)" env EXAMPLE_SMOKE=1 DATABASE_URL="$examples_database" node "dist/$example/main.js" || {
        local example_rc=$?
        ((examples_rc != 0)) || examples_rc=$example_rc
      }
    done
    return "$examples_rc"
  fi
}

for fixture in "${fixtures[@]}"; do tally_run consumers "$fixture" run_fixture "$fixture"; done
tally_finish consumers
