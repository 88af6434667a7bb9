#!/usr/bin/env bash
# Kept so that `bash test/consumers/run.sh` still works: the script lives in scripts/test-consumers.sh
# (npm run test:consumers).
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../scripts/test-consumers.sh" "$@"
