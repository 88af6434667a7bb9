#!/usr/bin/env bash
# A 3-node RabbitMQ cluster on this machine, without Docker (Debian's rabbitmq-server), for the cluster test.
#
#   scripts/cluster.sh start          wipe any old cluster state, start c1, c2, c3 and join them (12-20 s)
#   scripts/cluster.sh start NODE     start one stopped or killed node again, keeping its data (rejoins by itself)
#   scripts/cluster.sh stop           stop every node of the cluster (SIGKILL for one that does not stop)
#   scripts/cluster.sh kill NODE      SIGKILL one node (c1, c2 or c3), as a crash would
#   scripts/cluster.sh status         which nodes run, their ports, and the cluster's view of itself
#   scripts/cluster.sh leader QUEUE   the node that leads quorum queue QUEUE (vhost /)
#   scripts/cluster.sh urls           the AMQP URLs of the three nodes, comma-separated (for AMQP_URL)
#
# Nodes are c1@localhost, c2@localhost, c3@localhost; AMQP on 127.0.0.1:5681-5683, Erlang distribution on
# 25681-25683; data, logs and config files under $CLUSTER_BASE (default /var/tmp/amqp-retry-cluster), owned by the
# `rabbitmq` user because the Debian wrapper runs every node and CLI call as that user (whose Erlang cookie the
# nodes share). Each node has its own config file: /etc/rabbitmq/rabbitmq.conf pins the shared node's listener to
# 5672, and that node (rabbit@localhost) is never touched here. Partitions heal by themselves (autoheal); the
# dead-letter worker of quorum queues gives up waiting for a confirm after 5 s instead of 180 s, which shortens
# the stall of dead-lettering across nodes when a node is lost.
set -euo pipefail

BASE="${CLUSTER_BASE:-/var/tmp/amqp-retry-cluster}"
PORT_BASE="${CLUSTER_PORT_BASE:-5680}"        # c1 listens on PORT_BASE+1 ...
DIST_BASE="${CLUSTER_DIST_PORT_BASE:-25680}"  # ... and distributes on DIST_BASE+1
WAIT_SECONDS="${CLUSTER_WAIT_SECONDS:-90}"
NODES=(c1 c2 c3)
SERVER=/usr/lib/rabbitmq/bin/rabbitmq-server
CTL=/usr/lib/rabbitmq/bin/rabbitmqctl

log() { printf 'cluster: %s\n' "$*"; }
die() { printf 'cluster: %s\n' "$*" >&2; exit 1; }

[[ -x "$SERVER" && -x "$CTL" ]] || die "needs Debian's rabbitmq-server (apt-get install rabbitmq-server); for Docker use: docker compose --profile cluster up -d"
[[ "$(id -u)" == 0 ]] || die "run as root: the nodes run as the rabbitmq user and their folders belong to it"

as_rabbitmq() { # as_rabbitmq SECONDS cmd...: a RabbitMQ script as the rabbitmq user (its cookie), bounded in time
  local limit="$1"
  shift
  (cd /var/lib/rabbitmq && timeout "$limit" runuser -u rabbitmq -- env HOME=/var/lib/rabbitmq "$@")
}

index_of() { # index_of NODE -> 1..3; accepts c2 or c2@localhost and nothing else (never rabbit@localhost)
  case "${1%@localhost}" in c1) echo 1 ;; c2) echo 2 ;; c3) echo 3 ;; *) die "unknown node '$1': use c1, c2 or c3" ;; esac
}
amqp_port() { echo $((PORT_BASE + $(index_of "$1"))); }
dist_port() { echo $((DIST_BASE + $(index_of "$1"))); }
dir_of() { echo "$BASE/${1%@localhost}"; }
pidfile_of() { echo "$(dir_of "$1")/node.pid"; }
fullname() { echo "${1%@localhost}@localhost"; }

# node_env NODE: the environment that makes the Debian scripts run (or talk to) this node and not rabbit@localhost.
node_env() {
  local n="${1%@localhost}" d
  d="$(dir_of "$n")"
  export RABBITMQ_NODENAME="$(fullname "$n")" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$(amqp_port "$n")" \
    RABBITMQ_DIST_PORT="$(dist_port "$n")" RABBITMQ_MNESIA_BASE="$d/mnesia" RABBITMQ_LOG_BASE="$d/log" \
    RABBITMQ_PID_FILE="$(pidfile_of "$n")" RABBITMQ_ENABLED_PLUGINS_FILE="$d/enabled_plugins" \
    RABBITMQ_CONFIG_FILE="$d/rabbitmq.conf" RABBITMQ_ADVANCED_CONFIG_FILE="$d/advanced.config"
}

ctl() { # ctl NODE args...: rabbitmqctl against one cluster node, bounded in time
  local n="$1"
  shift
  (node_env "$n" && as_rabbitmq "$((WAIT_SECONDS + 10))" "$CTL" -q -n "$(fullname "$n")" "$@")
}

node_pid() { # prints the pid of a running node, or fails
  local f
  f="$(pidfile_of "$1")"
  [[ -s "$f" ]] || return 1
  local pid
  pid="$(tr -dc '0-9' <"$f")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && grep -q beam /proc/"$pid"/cmdline 2>/dev/null && echo "$pid"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

write_config() {
  local n="$1" d
  d="$(dir_of "$n")"
  mkdir -p "$d/mnesia" "$d/log"
  cat >"$d/rabbitmq.conf" <<EOF
# $(fullname "$n"), written by scripts/cluster.sh
listeners.tcp.1 = 127.0.0.1:$(amqp_port "$n")
cluster_partition_handling = autoheal
loopback_users.guest = true
EOF
  cp "$(dirname "${BASH_SOURCE[0]}")/cluster/advanced.config" "$d/advanced.config" # shared with docker-compose.yml
  echo '[].' >"$d/enabled_plugins"
  chown -R rabbitmq:rabbitmq "$d"
}

start_node() { # start_node NODE: start it detached and wait until it runs
  local n="$1"
  if node_pid "$n" >/dev/null; then log "$(fullname "$n") already runs"; return 0; fi
  [[ -f "$(dir_of "$n")/rabbitmq.conf" ]] || die "$(fullname "$n") has no state: run '$0 start' first"
  rm -f "$(pidfile_of "$n")"
  (node_env "$n" && as_rabbitmq 60 "$SERVER" -detached </dev/null >/dev/null 2>&1) || true
  # await_startup fails right after -detached; `wait PIDFILE` waits for the pid file, then for the app.
  ctl "$n" wait "$(pidfile_of "$n")" --timeout "$WAIT_SECONDS" >/dev/null ||
    die "$(fullname "$n") did not start within ${WAIT_SECONDS}s; see $(dir_of "$n")/log"
}

stop_node() {
  local n="$1" pid
  pid="$(node_pid "$n")" || return 0
  ctl "$n" stop "$(pidfile_of "$n")" >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  log "$(fullname "$n") did not stop in 10 s: SIGKILL"
  kill -9 "$pid" 2>/dev/null || true
}

cmd_start_cluster() {
  local started=$SECONDS n
  for n in "${NODES[@]}"; do stop_node "$n"; done
  for n in "${NODES[@]}"; do
    port_free "$(amqp_port "$n")" || die "port $(amqp_port "$n") is in use by something else"
    port_free "$(dist_port "$n")" || die "port $(dist_port "$n") is in use by something else"
  done
  rm -rf "$BASE"
  mkdir -p "$BASE"
  chown rabbitmq:rabbitmq "$BASE"
  for n in "${NODES[@]}"; do write_config "$n"; done
  # Started one after the other: three nodes booting at once on two busy cores time out more often than not.
  for n in "${NODES[@]}"; do start_node "$n"; done
  for n in c2 c3; do
    ctl "$n" stop_app >/dev/null
    ctl "$n" reset >/dev/null
    ctl "$n" join_cluster c1@localhost >>"$BASE/join.log" 2>&1 || die "$(fullname "$n") could not join c1@localhost; see $BASE/join.log"
    ctl "$n" start_app >/dev/null
  done
  local running
  running="$(ctl c1 eval 'length(rabbit_nodes:all_running()).')"
  [[ "$running" == 3 ]] || die "the cluster has $running running nodes after joining, not 3; see $BASE/*/log"
  log "3 nodes running in $((SECONDS - started)) s: AMQP_URL=$(cmd_urls)"
}

cmd_stop() {
  local n
  for n in "${NODES[@]}"; do stop_node "$n"; done
  log "stopped (state kept in $BASE until the next start)"
}

cmd_kill() {
  local n="$1" pid
  index_of "$n" >/dev/null
  pid="$(node_pid "$n")" || die "$(fullname "$n") is not running"
  kill -9 "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  log "killed $(fullname "$n") (pid $pid)"
}

any_running() { local n; for n in "${NODES[@]}"; do node_pid "$n" >/dev/null && { echo "$n"; return 0; }; done; return 1; }

cmd_status() {
  local n pid
  for n in "${NODES[@]}"; do
    if pid="$(node_pid "$n")"; then
      echo "$(fullname "$n") running pid $pid amqp://127.0.0.1:$(amqp_port "$n")"
    else
      echo "$(fullname "$n") down"
    fi
  done
  n="$(any_running)" || return 0
  ctl "$n" eval 'io:format("running: ~p~n", [lists:sort(rabbit_nodes:all_running())]), ok.' 2>/dev/null | grep running || true
}

cmd_leader() {
  local queue="$1" n
  n="$(any_running)" || die "no cluster node is running"
  # The queue's process id names the node that leads it; "none" when the queue does not exist.
  ctl "$n" eval "case rabbit_amqqueue:lookup(rabbit_misc:r(<<\"/\">>, queue, <<\"$queue\">>)) of {ok, Q} -> case amqqueue:get_pid(Q) of {_, Node} -> io:format(\"~s~n\", [Node]); Pid -> io:format(\"~s~n\", [node(Pid)]) end; _ -> io:format(\"none~n\") end, ok." | head -1
}

cmd_urls() {
  local n urls=()
  for n in "${NODES[@]}"; do urls+=("amqp://guest:guest@127.0.0.1:$(amqp_port "$n")"); done
  (IFS=,; echo "${urls[*]}")
}

case "${1:-}" in
  start) if [[ -n "${2:-}" ]]; then index_of "$2" >/dev/null; start_node "${2%@localhost}"; log "$(fullname "$2") running"; else cmd_start_cluster; fi ;;
  stop) cmd_stop ;;
  kill) [[ -n "${2:-}" ]] || die "usage: $0 kill c1|c2|c3"; cmd_kill "${2%@localhost}" ;;
  status) cmd_status ;;
  leader) [[ -n "${2:-}" ]] || die "usage: $0 leader QUEUE"; [[ "$2" =~ ^[A-Za-z0-9._:-]+$ ]] || die "queue name '$2' has characters this script does not quote"; cmd_leader "$2" ;;
  urls) cmd_urls ;;
  *) die "usage: $0 start [NODE] | stop | kill NODE | status | leader QUEUE | urls" ;;
esac
