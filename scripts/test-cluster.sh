#!/usr/bin/env bash
# npm run test:cluster: the cluster test on the 3-node cluster of scripts/cluster.sh. Uses the cluster if all three
# nodes run already, else starts it from a clean state; stops it at the end whatever happens (CLUSTER_KEEP=1 keeps it).
# CLUSTER_N messages (default 5000; CI uses fewer). The one-node comparison runs on the test broker ($AMQP_URL).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

stop_cluster() { [[ "${CLUSTER_KEEP:-}" == 1 ]] || bash scripts/cluster.sh stop; }
trap stop_cluster EXIT

bash scripts/ensure-broker.sh
if [[ "$(bash scripts/cluster.sh status | grep -c ' running pid ')" == 3 ]]; then
  echo "test-cluster: using the running cluster"
else
  bash scripts/cluster.sh start
fi
CLUSTER_N="${CLUSTER_N:-5000}" node --experimental-vm-modules --no-warnings=ExperimentalWarning node_modules/jest/bin/jest.js \
  -c jest.cluster.config.js --runInBand "$@"
