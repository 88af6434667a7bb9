#!/usr/bin/env bash
# RabbitMQ nodes of a chosen version on this machine, each with its own node name, ports and data directory, for the
# tests: Debian's 3.10 from the host, 4.0 (Debian trixie) and 4.3 (Debian sid) in chroots made by debootstrap, or
# the official Docker images where a Docker engine runs. Never touches a node it did not start (rabbit@localhost on
# 5672, the cluster of scripts/cluster.sh, anyone else's).
#
#   scripts/rabbitmq.sh start   VERSION [--fresh] [NODE OPTIONS]  start the node (making the chroot first if needed)
#                                                                 and wait until it runs; --fresh wipes its data first
#   scripts/rabbitmq.sh stop    VERSION [NODE OPTIONS]            stop it (SIGKILL after 30 s); a private node's data
#                                                                 is deleted
#   scripts/rabbitmq.sh status  VERSION [NODE OPTIONS]            "running" or "down" (exit 3), with its URL and version
#   scripts/rabbitmq.sh ctl     VERSION [NODE OPTIONS] [--] ARGS  rabbitmqctl ARGS against that node
#   scripts/rabbitmq.sh env     VERSION [NODE OPTIONS]            export AMQP_URL=... and RABBITMQCTL=... lines for
#                                                                 the tests: eval "$(scripts/rabbitmq.sh env 4.3)"
#   scripts/rabbitmq.sh private VERSION [--owner-pid PID]         start a throwaway node on the first free port from
#                                                                 5720 (node privateP@localhost); prints NAME=, PORT=,
#                                                                 AMQP_URL= and RABBITMQCTL= lines. `stop VERSION
#                                                                 --name NAME` stops it and deletes its data; with
#                                                                 --owner-pid it also stops once process PID ends
#   scripts/rabbitmq.sh install VERSION                           make the chroot (or pull the image); starts nothing
#   scripts/rabbitmq.sh destroy VERSION                           stop every node of VERSION and delete its chroot
#
# VERSION: 3.10 (the host's rabbitmq-server; private nodes only), 4.0 or 4.3.
# NODE OPTIONS: --name NODE (default rabbit40@localhost, rabbit43@localhost), --port P (default 5700, 5710),
# --dist-port D (default P + 20000), --owner-pid PID.
# Environment: RABBITMQ_RUNTIME=auto|docker|chroot (auto: Docker images where `docker info` answers, else the host's
# 3.10 and chroots); RABBITMQ_CACHE (default ~/.cache/nestjs-amqp-retry/rabbitmq, or under XDG_CACHE_HOME: the
# chroots and their nodes' data, shared by the checkouts of this machine; the host's 3.10 nodes keep theirs in the
# checkout's .cache/rabbitmq/3.10/nodes, RABBITMQ_HOST_NODES);
# RABBITMQ_WAIT_SECONDS (default 90: every wait is bounded by it); RABBITMQ_AUTO_INSTALL=1 (apt-get install
# debootstrap when missing).
#
# A chroot is made once per VERSION (debootstrap --variant=minbase, then apt-get install rabbitmq-server; 1-2 minutes
# and about 500 MB) in $RABBITMQ_CACHE/VERSION/root, with the host's /etc/hosts (without it the node fails with
# epmd_error localhost nxdomain) and a policy-rc.d that keeps the package from starting a service. proc is mounted
# in it while one of its nodes runs, and unmounted when the last one stops. A node's folders live in
# $RABBITMQ_CACHE/VERSION/root/var/lib/rabbitmq/nodes/<short name> (3.10: .cache/rabbitmq/3.10/nodes/...), its
# own rabbitmq.conf sets its listener on 127.0.0.1 (the host's /etc/rabbitmq/rabbitmq.conf pins 5672), and the
# nodes register with the host's epmd on 4369. Every node runs as the `rabbitmq` user of its root.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SELF="$REPO/scripts/rabbitmq.sh"
# Outside the checkout, so that a fresh clone (CI) reuses the chroots a run on this machine made (5 minutes of CPU).
CACHE="${RABBITMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nestjs-amqp-retry/rabbitmq}"
WAIT_SECONDS="${RABBITMQ_WAIT_SECONDS:-90}"
[[ "$WAIT_SECONDS" =~ ^[0-9]+$ ]] || WAIT_SECONDS=90
PRIVATE_PORTS=(5720 5739) # the private nodes' range: 5740-5760 belong to other tools on this machine

log() { printf 'rabbitmq.sh: %s\n' "$*" >&2; }
die() {
  printf 'rabbitmq.sh: %s\n' "$*" >&2
  exit 1
}
usage() { die "usage: $0 start|stop|status|ctl|env|private|install|destroy VERSION [--name NODE] [--port P] [--dist-port D] [--fresh] [--owner-pid PID] [-- ARGS] (see the head of $SELF)"; }

timed() { # timed LABEL cmd...: runs cmd, logs how long it took
  local label="$1" start=$SECONDS
  shift
  "$@"
  log "$label: $((SECONDS - start)) s"
}

# ---- arguments -----------------------------------------------------------------------------------------------------
COMMAND="${1:-}"
VERSION="${2:-}"
[[ -n "$COMMAND" && -n "$VERSION" ]] || usage
shift 2
case "$VERSION" in
  3.10) SUITE="" IMAGE="rabbitmq:3.10" DEFAULT_NAME="" DEFAULT_PORT="" ;;
  4.0) SUITE=trixie IMAGE="rabbitmq:4.0" DEFAULT_NAME=rabbit40@localhost DEFAULT_PORT=5700 ;;
  4.3) SUITE=sid IMAGE="rabbitmq:4.3" DEFAULT_NAME=rabbit43@localhost DEFAULT_PORT=5710 ;;
  *) die "unknown version '$VERSION': use 3.10, 4.0 or 4.3" ;;
esac
NAME="" PORT="" DIST_PORT="" FRESH=0 OWNER_PID="" CTL_ARGS=()
while (($#)); do
  case "$1" in
    --name) NAME="${2:?--name needs a node name}" && shift 2 ;;
    --port) PORT="${2:?--port needs a port}" && shift 2 ;;
    --dist-port) DIST_PORT="${2:?--dist-port needs a port}" && shift 2 ;;
    --fresh) FRESH=1 && shift ;;
    --owner-pid) OWNER_PID="${2:?--owner-pid needs a pid}" && shift 2 ;;
    --) shift && CTL_ARGS=("$@") && break ;;
    *) if [[ "$COMMAND" == ctl ]]; then CTL_ARGS=("$@") && break; else usage; fi ;;
  esac
done
[[ -z "$OWNER_PID" || "$OWNER_PID" =~ ^[0-9]+$ ]] || die "--owner-pid '$OWNER_PID' is not a pid"

# ---- the runtime: docker, chroot (4.x) or host (3.10) ------------------------------------------------------------------
docker_engine() { command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; }
case "${RABBITMQ_RUNTIME:-auto}" in
  docker) docker_engine || die "RABBITMQ_RUNTIME=docker, but no Docker engine answers 'docker info'"; RUNTIME=docker ;;
  chroot) RUNTIME=local ;;
  auto) if [[ "$VERSION" != 3.10 || ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]] && docker_engine; then RUNTIME=docker; else RUNTIME=local; fi ;;
  *) die "RABBITMQ_RUNTIME='${RABBITMQ_RUNTIME}': use auto, docker or chroot" ;;
esac
if [[ "$RUNTIME" == local && "$VERSION" == 3.10 ]]; then
  [[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]] || die "3.10 runs from Debian's rabbitmq-server, which is not installed here (apt-get install rabbitmq-server), or from Docker (RABBITMQ_RUNTIME=docker)"
  ROOT="" # the host itself
  # In the checkout, not in $CACHE: a host node runs as the rabbitmq user, who may not enter a home directory (root's
  # is 0700), while a chroot's nodes keep their data inside the chroot.
  NODES_DIR="${RABBITMQ_HOST_NODES:-$REPO/.cache/rabbitmq/3.10/nodes}"
else
  ROOT="$CACHE/$VERSION/root"
  NODES_DIR="$ROOT/var/lib/rabbitmq/nodes"
fi

# ---- the node ------------------------------------------------------------------------------------------------------
resolve_node() { # fills NAME, SHORT, PORT, DIST_PORT from the options and the version's defaults
  NAME="${NAME:-$DEFAULT_NAME}"
  [[ -n "$NAME" ]] || die "RabbitMQ $VERSION has no default node here (the host's rabbit@localhost is never touched): give --name and --port, or use '$0 private $VERSION'"
  [[ "$NAME" == *@* ]] || NAME="$NAME@localhost"
  [[ "$NAME" =~ ^[A-Za-z0-9_-]+@localhost$ ]] || die "node name '$NAME': use letters, digits, '-' or '_', then @localhost"
  SHORT="${NAME%@localhost}"
  case "$SHORT" in rabbit | c1 | c2 | c3) die "node '$NAME' belongs to the shared broker or to scripts/cluster.sh: never touched here" ;; esac
  if [[ -z "$PORT" ]]; then
    [[ "$NAME" == "$DEFAULT_NAME" ]] || die "give --port for node '$NAME'"
    PORT="$DEFAULT_PORT"
  fi
  DIST_PORT="${DIST_PORT:-$((PORT + 20000))}"
  local p
  for p in "$PORT" "$DIST_PORT"; do
    [[ "$p" =~ ^[0-9]+$ ]] && ((p > 1024 && p < 65536)) || die "port '$p' is not a port above 1024"
    case "$p" in 5672 | 25672 | 568[1-3] | 2568[1-3] | 4369) die "port $p belongs to the shared broker, epmd or scripts/cluster.sh: never used here" ;; esac
  done
  NODE_DIR="$NODES_DIR/$SHORT"
  CONTAINER="amqp-retry-$SHORT"
}

# The node's folders as the node sees them (inside its root).
node_path() { echo "${NODE_DIR#"$ROOT"}${1:+/$1}"; }

# in_root SECONDS cmd...: a command as the rabbitmq user of the node's root, bounded in time, with the node's
# environment (which wins over rabbitmq-env.conf).
in_root() {
  local limit="$1"
  shift
  local env=(env HOME=/var/lib/rabbitmq LANG=C.UTF-8 LC_ALL=C.UTF-8
    RABBITMQ_NODENAME="$NAME" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$PORT" RABBITMQ_DIST_PORT="$DIST_PORT"
    RABBITMQ_MNESIA_BASE="$(node_path mnesia)" RABBITMQ_LOG_BASE="$(node_path log)" RABBITMQ_PID_FILE="$(node_path node.pid)"
    RABBITMQ_ENABLED_PLUGINS_FILE="$(node_path enabled_plugins)" RABBITMQ_CONFIG_FILE="$(node_path rabbitmq.conf)"
    RABBITMQ_ADVANCED_CONFIG_FILE="$(node_path advanced.config)")
  if [[ -z "$ROOT" ]]; then
    (cd /var/lib/rabbitmq && timeout "$limit" runuser -u rabbitmq -- "${env[@]}" "$@")
  else
    timeout "$limit" chroot "$ROOT" /usr/sbin/runuser -u rabbitmq -- sh -c 'cd /var/lib/rabbitmq && exec "$@"' sh "${env[@]}" "$@"
  fi
}

node_pid() { # the pid of the running node, or fails
  local file="$NODE_DIR/node.pid" pid
  [[ -s "$file" ]] || return 1
  pid="$(tr -dc '0-9' <"$file")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && grep -q beam "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

ctl() { # ctl args...: rabbitmqctl against the node
  if [[ "$RUNTIME" == docker ]]; then
    timeout "$((WAIT_SECONDS + 10))" docker exec "$CONTAINER" rabbitmqctl "$@"
  else
    in_root "$((WAIT_SECONDS + 10))" /usr/lib/rabbitmq/bin/rabbitmqctl -n "$NAME" "$@"
  fi
}

# ---- the chroot ----------------------------------------------------------------------------------------------------
need_root() { [[ "$(id -u)" == 0 ]] || die "run as root: $1"; }

ensure_debootstrap() {
  command -v debootstrap >/dev/null 2>&1 && return 0
  [[ "${RABBITMQ_AUTO_INSTALL:-}" == 1 ]] || die "needs debootstrap to make a Debian $SUITE chroot for RabbitMQ $VERSION: apt-get install debootstrap (or RABBITMQ_AUTO_INSTALL=1), or run a Docker engine"
  timed "apt-get install debootstrap" run_logged "$CACHE/apt-debootstrap.log" 600 bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap' ||
    die "apt-get install debootstrap failed; see $CACHE/apt-debootstrap.log"
}

run_logged() { # run_logged LOGFILE SECONDS cmd...: output to LOGFILE, bounded in time
  local file="$1" limit="$2"
  shift 2
  timeout "$limit" "$@" </dev/null >"$file" 2>&1
}

mount_proc() { # mount_proc DIR: proc on DIR/proc, once
  mountpoint -q "$1/proc" || mount -t proc proc "$1/proc"
}

unmount_proc() { # unmount_proc DIR
  if mountpoint -q "$1/proc"; then umount "$1/proc" 2>/dev/null || umount -l "$1/proc"; fi
}

installed_version() { chroot "$1" dpkg-query -W -f '${Version}' rabbitmq-server 2>/dev/null; }

check_version() { # check_version DIR: the suite's rabbitmq-server must still be VERSION
  local found
  found="$(installed_version "$1")" || die "rabbitmq-server is not installed in $1"
  [[ "$found" == "$VERSION".* ]] || die "Debian $SUITE now has rabbitmq-server $found, not $VERSION.x: delete $CACHE/$VERSION ('$0 destroy $VERSION') and point this script at a suite that has $VERSION"
}

# Makes $ROOT once: debootstrap into a temporary folder, install rabbitmq-server, then rename it into place, so an
# interrupted run leaves no half-made chroot behind. A lock keeps two runs from making it at once.
ensure_chroot() {
  [[ -f "$CACHE/$VERSION/ready" && -x "$ROOT/usr/lib/rabbitmq/bin/rabbitmq-server" ]] && return 0
  need_root "debootstrap and chroot need it"
  mkdir -p "$CACHE/$VERSION"
  exec 8>"$CACHE/$VERSION.lock"
  timeout "$((WAIT_SECONDS * 5))" flock 8 || die "another run holds $CACHE/$VERSION.lock for more than $((WAIT_SECONDS * 5)) s"
  if [[ -f "$CACHE/$VERSION/ready" && -x "$ROOT/usr/lib/rabbitmq/bin/rabbitmq-server" ]]; then exec 8>&-; return 0; fi
  ensure_debootstrap
  local tmp="$CACHE/$VERSION/root.tmp" started=$SECONDS
  unmount_proc "$tmp" 2>/dev/null || true
  rm -rf --one-file-system "$tmp" "$ROOT" "$CACHE/$VERSION/ready"
  log "making a Debian $SUITE chroot for RabbitMQ $VERSION in $ROOT (1-2 minutes, about 500 MB)"
  timed "debootstrap $SUITE" run_logged "$CACHE/$VERSION/debootstrap.log" 900 debootstrap --variant=minbase "$SUITE" "$tmp" ||
    die "debootstrap $SUITE failed; see $CACHE/$VERSION/debootstrap.log"
  cp /etc/hosts "$tmp/etc/hosts"
  printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
  chmod 755 "$tmp/usr/sbin/policy-rc.d"
  mount_proc "$tmp"
  local rc=0
  timed "apt-get install rabbitmq-server in the chroot" run_logged "$CACHE/$VERSION/install.log" 600 chroot "$tmp" \
    env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends rabbitmq-server || rc=$?
  unmount_proc "$tmp"
  ((rc == 0)) || die "apt-get install rabbitmq-server failed in the chroot; see $CACHE/$VERSION/install.log"
  check_version "$tmp"
  chroot "$tmp" apt-get clean
  mv "$tmp" "$ROOT"
  installed_version "$ROOT" >"$CACHE/$VERSION/ready"
  log "chroot ready in $((SECONDS - started)) s: rabbitmq-server $(cat "$CACHE/$VERSION/ready")"
  exec 8>&-
}

# The chroot's own rabbitmq-env.conf names the version's default node, so that a plain rabbitmqctl in the chroot
# talks to it; every node started here also gets its name and ports from the environment, which wins.
write_env_conf() {
  cat >"$ROOT/etc/rabbitmq/rabbitmq-env.conf" <<EOF
# written by scripts/rabbitmq.sh
NODENAME=$DEFAULT_NAME
NODE_PORT=$DEFAULT_PORT
DIST_PORT=$((DEFAULT_PORT + 20000))
EOF
}

write_node_config() {
  mkdir -p "$NODE_DIR/mnesia" "$NODE_DIR/log"
  cat >"$NODE_DIR/rabbitmq.conf" <<EOF
# $NAME, written by scripts/rabbitmq.sh
listeners.tcp.1 = 127.0.0.1:$PORT
loopback_users.guest = true
EOF
  # The consistent-hash exchange routes partitioned handlers (docs/partitions.md); it ships with RabbitMQ.
  echo '[rabbitmq_consistent_hash_exchange].' >"$NODE_DIR/enabled_plugins"
  echo '[].' >"$NODE_DIR/advanced.config"
  local owner
  if [[ -z "$ROOT" ]]; then owner=rabbitmq:rabbitmq; else owner="$(chroot "$ROOT" id -u rabbitmq):$(chroot "$ROOT" id -g rabbitmq)"; fi
  chown -R "$owner" "$NODE_DIR"
}

# ---- commands: local (host or chroot) ------------------------------------------------------------------------------
local_start() {
  need_root "the nodes run as the rabbitmq user of their root"
  [[ -z "$ROOT" ]] || ensure_chroot
  if node_pid >/dev/null; then
    if ((FRESH == 0)); then
      log "$NAME already runs (amqp://127.0.0.1:$PORT)"
      return 0
    fi
    log "$NAME runs: stopping it for a fresh start"
    local_stop
  fi
  local p
  for p in "$PORT" "$DIST_PORT"; do port_free "$p" || die "port $p is in use by another process: choose another --port"; done
  if command -v epmd >/dev/null && epmd -names 2>/dev/null | grep -q "^name $SHORT at port"; then
    die "a node named $NAME is registered with epmd already, not started here: choose another --name"
  fi
  ((FRESH == 0)) || rm -rf --one-file-system "$NODE_DIR"
  if [[ -n "$ROOT" ]]; then
    mount_proc "$ROOT"
    write_env_conf
  else
    mkdir -p "$NODES_DIR"
  fi
  write_node_config
  rm -f "$NODE_DIR/node.pid"
  local started=$SECONDS
  in_root 60 /usr/lib/rabbitmq/bin/rabbitmq-server -detached </dev/null >"$NODE_DIR/log/start.out" 2>&1 || true
  # await_startup fails right after -detached; `wait PIDFILE` waits for the pid file, then for the app.
  if ! ctl wait "$(node_path node.pid)" --timeout "$WAIT_SECONDS" >/dev/null 2>"$NODE_DIR/log/wait.err"; then
    local pid
    pid="$(node_pid)" && kill -9 "$pid" 2>/dev/null || true
    tail -n 20 "$NODE_DIR/log/start.out" "$NODE_DIR/log/wait.err" "$NODE_DIR"/log/*.log >&2 2>/dev/null || true
    [[ -z "$ROOT" ]] || any_node_runs || unmount_proc "$ROOT"
    die "$NAME did not start within ${WAIT_SECONDS} s; its logs are in $NODE_DIR/log"
  fi
  [[ -z "$OWNER_PID" ]] || start_watch
  log "$NAME (RabbitMQ $(node_version)) runs on amqp://127.0.0.1:$PORT, started in $((SECONDS - started)) s"
}

any_node_runs() { # does any node of this root run?
  local dir pid
  for dir in "$NODES_DIR"/*/; do
    [[ -s "$dir/node.pid" ]] || continue
    pid="$(tr -dc '0-9' <"$dir/node.pid")"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && grep -q beam "/proc/$pid/cmdline" 2>/dev/null && return 0
  done
  return 1
}

local_stop() {
  need_root "the nodes run as the rabbitmq user of their root"
  local pid started=$SECONDS
  if pid="$(node_pid)"; then
    ctl stop "$(node_path node.pid)" >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 30))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      log "$NAME did not stop in 30 s: SIGKILL"
      kill -9 "$pid" 2>/dev/null || true
    fi
    log "$NAME stopped in $((SECONDS - started)) s"
  else
    log "$NAME is not running"
  fi
  [[ "$SHORT" != private* ]] || rm -rf --one-file-system "$NODE_DIR"
  if [[ -n "$ROOT" && -d "$ROOT" ]] && ! any_node_runs; then unmount_proc "$ROOT"; fi
}

node_version() { ctl -q eval 'rabbit_misc:version().' 2>/dev/null | tr -d '"' | head -c 40 || echo '?'; }

# Stops the node once OWNER_PID has ended (a test run killed before its cleanup), or quits once the node is gone.
start_watch() {
  setsid bash "$SELF" _watch "$VERSION" --name "$NAME" --port "$PORT" --dist-port "$DIST_PORT" --owner-pid "$OWNER_PID" \
    </dev/null >/dev/null 2>&1 &
}

watch_owner() {
  while kill -0 "$OWNER_PID" 2>/dev/null; do
    if [[ "$RUNTIME" == docker ]]; then
      [[ "$(docker inspect -f '{{.State.Running}}' "$CONTAINER" 2>/dev/null)" == true ]] || exit 0
    else
      node_pid >/dev/null || exit 0
    fi
    sleep 2
  done
  bash "$SELF" stop "$VERSION" --name "$NAME" --port "$PORT" --dist-port "$DIST_PORT"
}

# ---- commands: docker ----------------------------------------------------------------------------------------------
docker_start() {
  local started=$SECONDS
  if ((FRESH == 0)) && docker_running; then
    log "$CONTAINER already runs (amqp://127.0.0.1:$PORT)"
    return 0
  fi
  port_free "$PORT" || die "port $PORT is in use by another process: choose another --port"
  docker rm -f "$CONTAINER" >/dev/null 2>&1 || true # a container holds its data: a new one starts clean
  timed "docker pull $IMAGE" timeout 600 docker pull -q "$IMAGE" >/dev/null
  docker run -d --name "$CONTAINER" --hostname "$SHORT" -p "127.0.0.1:$PORT:5672" \
    -v "$REPO/scripts/rabbitmq/enabled_plugins:/etc/rabbitmq/enabled_plugins:ro" "$IMAGE" >/dev/null
  local deadline=$((SECONDS + WAIT_SECONDS))
  until ctl await_startup --timeout 5 >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      docker logs --tail 20 "$CONTAINER" >&2 || true
      die "$CONTAINER did not start within ${WAIT_SECONDS} s"
    fi
    sleep 1
  done
  [[ -z "$OWNER_PID" ]] || start_watch
  log "$CONTAINER ($IMAGE, rabbit@$SHORT) runs on amqp://127.0.0.1:$PORT, started in $((SECONDS - started)) s"
}

docker_stop() {
  docker rm -f "$CONTAINER" >/dev/null 2>&1 && log "$CONTAINER removed" || log "$CONTAINER is not running"
}

docker_running() { [[ "$(docker inspect -f '{{.State.Running}}' "$CONTAINER" 2>/dev/null)" == true ]]; }

# ---- commands ------------------------------------------------------------------------------------------------------
ctl_command() { # the command line that runs rabbitmqctl against the node (for RABBITMQCTL; split on spaces)
  [[ "$SELF" != *" "* ]] || die "the repository's path has a space: RABBITMQCTL cannot name $SELF"
  echo "$SELF ctl $VERSION --name $NAME --port $PORT --"
}

cmd_env() { # for eval "$(scripts/rabbitmq.sh env VERSION)"
  printf 'export AMQP_URL=%q\nexport RABBITMQCTL=%q\n' "amqp://guest:guest@127.0.0.1:$PORT" "$(ctl_command)"
}

running() { if [[ "$RUNTIME" == docker ]]; then docker_running; else node_pid >/dev/null; fi; }

cmd_status() {
  if running; then
    echo "$NAME running amqp://127.0.0.1:$PORT RabbitMQ $(node_version) ($RUNTIME)"
  else
    echo "$NAME down"
    return 3
  fi
}

# private: the first port from 5720 whose AMQP and distribution ports are free and whose node folder is not taken.
# The folder is claimed under a lock, so two runs starting private nodes at once get two ports.
cmd_private() {
  local port claimed=""
  mkdir -p "$CACHE"
  exec 9>"$CACHE/private.lock"
  timeout "$((WAIT_SECONDS * 5))" flock 9 || die "another run holds $CACHE/private.lock for more than $((WAIT_SECONDS * 5)) s"
  for ((port = PRIVATE_PORTS[0]; port <= PRIVATE_PORTS[1]; port++)); do
    NAME="private$port@localhost" PORT="$port" DIST_PORT=""
    resolve_node
    port_free "$PORT" && port_free "$DIST_PORT" || continue
    if [[ "$RUNTIME" == docker ]]; then
      docker inspect "$CONTAINER" >/dev/null 2>&1 && continue
    else
      [[ -d "$NODE_DIR" ]] && node_pid >/dev/null && continue
      [[ -d "$NODE_DIR" && -n "$(find "$NODE_DIR" -maxdepth 0 -mmin -2 2>/dev/null)" ]] && continue # being started by another run
      rm -rf --one-file-system "$NODE_DIR"
      [[ -z "$ROOT" ]] || ensure_chroot
      mkdir -p "$NODE_DIR"
    fi
    claimed=1
    break
  done
  exec 9>&-
  [[ -n "$claimed" ]] || die "no free port for a private node in ${PRIVATE_PORTS[0]}-${PRIVATE_PORTS[1]}: see '$0 status' of the nodes under $NODES_DIR"
  FRESH=1
  if [[ "$RUNTIME" == docker ]]; then docker_start; else local_start; fi
  echo "NAME=$NAME"
  echo "PORT=$PORT"
  echo "AMQP_URL=amqp://guest:guest@127.0.0.1:$PORT"
  echo "RABBITMQCTL=$(ctl_command)"
}

case "$COMMAND" in
  install)
    if [[ "$RUNTIME" == docker ]]; then timed "docker pull $IMAGE" docker pull -q "$IMAGE" >/dev/null; elif [[ -n "$ROOT" ]]; then ensure_chroot; fi
    ;;
  start | stop | status | ctl | env | _watch)
    resolve_node
    case "$COMMAND" in
      start) if [[ "$RUNTIME" == docker ]]; then docker_start; else local_start; fi ;;
      stop) if [[ "$RUNTIME" == docker ]]; then docker_stop; else local_stop; fi ;;
      status) cmd_status ;;
      ctl) ctl "${CTL_ARGS[@]}" ;;
      env) cmd_env ;;
      _watch) watch_owner ;;
    esac
    ;;
  private) cmd_private ;;
  destroy)
    if [[ "$RUNTIME" == docker ]]; then
      docker ps -a --format '{{.Names}}' | grep '^amqp-retry-' | while read -r c; do docker rm -f "$c" >/dev/null; done
    elif [[ -n "$ROOT" ]]; then
      need_root "the chroot belongs to root"
      for dir in "$NODES_DIR"/*/; do
        [[ -d "$dir" ]] || continue
        short="$(basename "$dir")"
        port="$(sed -n 's/^listeners\.tcp\.1 = 127\.0\.0\.1://p' "$dir/rabbitmq.conf" 2>/dev/null)"
        [[ -n "$port" ]] || continue
        bash "$SELF" stop "$VERSION" --name "$short@localhost" --port "$port" || true
      done
      unmount_proc "$ROOT" 2>/dev/null || true
      unmount_proc "$CACHE/$VERSION/root.tmp" 2>/dev/null || true
      rm -rf --one-file-system "$CACHE/$VERSION" "$CACHE/$VERSION.lock"
      log "deleted $CACHE/$VERSION"
    fi
    ;;
  *) usage ;;
esac
