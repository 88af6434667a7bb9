#!/usr/bin/env bash
# Kept so that `bash bench/run.sh` still works: the bench's entry point lives in scripts/bench.sh (npm run bench).
exec bash "$(dirname "${BASH_SOURCE[0]}")/../scripts/bench.sh" "$@"
