#!/usr/bin/env bash
# npm run bench (or bash bench/run.sh): makes sure a broker runs, builds what the bench measures (the library as users get it, the bench
# and its Nest 11 peers), installs the peers once, then runs the scenarios (bench/main.ts).
# BENCH_QUICK=1 for a smoke run; see bench/README.md for the other switches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tsc=node_modules/.bin/tsc

bash scripts/ensure-broker.sh
# The outbox scenario needs PostgreSQL (POSTGRES_URL).
if [[ -z "${BENCH_ONLY:-}" || "${BENCH_ONLY}" == *outbox* ]]; then bash scripts/ensure-services.sh; fi
"$tsc" -p libs/amqp-retry/tsconfig.lib.json
if [[ ! -d bench/peers/node_modules ]]; then
  # The lock file pins the peers, so every run of the bench measures the same versions.
  npm ci --prefix bench/peers --no-audit --no-fund
fi
"$tsc" -p bench/peers/tsconfig.json
"$tsc" -p bench/tsconfig.json
exec node bench/dist/main.js
