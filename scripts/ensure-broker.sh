#!/usr/bin/env bash
# Make sure a RabbitMQ broker is reachable at $AMQP_URL, starting one if we can.
#
# Order:  a. already reachable            -> nothing to do
#         b. local target + Docker engine  -> docker compose up -d --wait rabbitmq
#         c. local target + rabbitmq-server installed -> rabbitmq-server -detached
#         d. local target + RABBITMQ_AUTO_INSTALL=1 + root + apt-get -> install, then c
#         e. otherwise                     -> explain how to get a broker, exit 1
# Paths b-d are only tried when the target is this machine on the default AMQP
# port (5672, plain amqp://), because that is where a broker started here listens.
# Every wait is bounded by BROKER_WAIT_SECONDS (default 90). Safe to run repeatedly.
# Plugins: enabled only on a node this script started, or with ENABLE_BROKER_PLUGINS=1 (see ensure_plugins); a broker
# it found running is left as it is, with a note of what to enable.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AMQP_URL="${AMQP_URL:-amqp://guest:guest@localhost:5672}"
WAIT_SECONDS="${BROKER_WAIT_SECONDS:-90}"
[[ "$WAIT_SECONDS" =~ ^[0-9]+$ ]] || WAIT_SECONDS=90
LOCAL_PORT=5672

log() { printf 'ensure-broker: %s\n' "$*"; }
err() { printf 'ensure-broker: %s\n' "$*" >&2; }

# ---- parse AMQP_URL ---------------------------------------------------------
scheme="${AMQP_URL%%://*}"
if [[ "$scheme" == "$AMQP_URL" ]]; then scheme=amqp; rest="$AMQP_URL"; else rest="${AMQP_URL#*://}"; fi
scheme="${scheme,,}"
case "$scheme" in
  amqp) default_port=5672 ;;
  amqps) default_port=5671 ;;
  *) err "unsupported scheme '${scheme}' in AMQP_URL (expected amqp:// or amqps://)"; exit 1 ;;
esac
authority="${rest%%[/?#]*}"        # strip /vhost, ?query, #fragment
hostport="${authority##*@}"        # strip user:pass@ (last @ wins)
if [[ "$authority" == *@* ]]; then
  userinfo="${authority%@*}"
  masked_authority="${userinfo%%:*}$([[ "$userinfo" == *:* ]] && printf ':***')@${hostport}"
else
  masked_authority="$authority"
fi
MASKED_URL="${scheme}://${masked_authority}${rest:${#authority}}"

if [[ "$hostport" == \[* ]]; then  # [ipv6]:port
  host="${hostport%%]*}"; host="${host#[}"
  port="${hostport#*]}"; port="${port#:}"
elif [[ "$hostport" == *:*:* ]]; then  # bare IPv6 without port
  host="$hostport"; port=""
else
  host="${hostport%%:*}"
  port=""; [[ "$hostport" == *:* ]] && port="${hostport#*:}"
fi
host="${host:-localhost}"
port="${port:-$default_port}"
if ! [[ "$port" =~ ^[0-9]+$ ]] || (( port < 1 || port > 65535 )); then
  err "invalid port '${port}' in AMQP_URL=${MASKED_URL}"; exit 1
fi
TARGET="${host}:${port}"
[[ "$host" == *:* ]] && TARGET="[${host}]:${port}"

# ---- helpers ----------------------------------------------------------------
port_open() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$host" "$port" >/dev/null 2>&1
}

# wait_port <what>: poll the AMQP port until it accepts connections or the deadline passes
wait_port() {
  local deadline=$((SECONDS + WAIT_SECONDS))
  until port_open; do
    if (( SECONDS >= deadline )); then
      err "$1 did not accept connections on ${TARGET} within ${WAIT_SECONDS}s"
      return 1
    fi
    sleep 1
  done
}

find_rmq() {  # find_rmq <tool>: print the path of a RabbitMQ CLI tool, or fail
  local p
  if p="$(command -v "$1" 2>/dev/null)"; then printf '%s\n' "$p"; return 0; fi
  for p in "/usr/sbin/$1" "/usr/lib/rabbitmq/bin/$1" "/usr/local/sbin/$1"; do
    [[ -x "$p" ]] && { printf '%s\n' "$p"; return 0; }
  done
  return 1
}

is_local_default() {
  case "${host,,}" in localhost|127.0.0.1|::1) ;; *) return 1 ;; esac
  [[ "$scheme" == amqp && "$port" == "$LOCAL_PORT" ]]
}

start_local_server() {  # start_local_server <how-label>
  local server ctl diag
  server="$(find_rmq rabbitmq-server)"
  ctl="$(find_rmq rabbitmqctl || true)"
  diag="$(find_rmq rabbitmq-diagnostics || true)"
  # A node may already be running (e.g. still booting, or started by apt's postinst).
  if [[ -n "$diag" ]] && timeout 15 "$diag" -q ping >/dev/null 2>&1; then
    STARTED=found  # someone else's node, still booting: not this script's to change
  else
    "$server" -detached >/dev/null </dev/null || true  # fails harmlessly if a node is already up
    STARTED=started
  fi
  if [[ -n "$ctl" ]]; then
    timeout "$((WAIT_SECONDS + 5))" "$ctl" -q await_startup --timeout "$WAIT_SECONDS" >/dev/null 2>&1 || true
  fi
  wait_port "rabbitmq-server" || exit 1
  log "$1 (${TARGET})"
}

# The consistent-hash exchange routes partitioned handlers (docs/partitions.md). Its plugin ships with RabbitMQ but
# is off by default. Enabling a plugin changes the broker for everyone who uses it, so this script enables it only on
# a node it started itself (`ensure_plugins started`), or when asked to (ENABLE_BROKER_PLUGINS=1: CI, whose broker is
# its own). On a broker it found running it only looks (rabbitmq-plugins list, on the local node) and, when the plugin
# is off or cannot be checked, says what to enable; it changes nothing there.
PLUGIN=rabbitmq_consistent_hash_exchange
ensure_plugins() {  # ensure_plugins started|found
  local plugins listed
  if ! is_local_default || ! plugins="$(find_rmq rabbitmq-plugins)"; then
    if [[ "$1" == found ]]; then
      log "not checked: partitioned handlers need the plugin ${PLUGIN} on ${TARGET} (rabbitmq-plugins enable ${PLUGIN}, no restart)"
    fi
    return 0
  fi
  if listed="$(timeout 30 "$plugins" -q list -e -m 2>/dev/null)" && grep -qx "$PLUGIN" <<<"$listed"; then return 0; fi
  if [[ "$1" == started || "${ENABLE_BROKER_PLUGINS:-}" == 1 ]]; then
    if timeout 60 "$plugins" -q enable "$PLUGIN" >/dev/null 2>&1; then
      log "enabled the plugin ${PLUGIN} (partitioned handlers)"
    else
      err "could not enable ${PLUGIN}; partitioned handlers need it: rabbitmq-plugins enable ${PLUGIN}"
    fi
    return 0
  fi
  err "the plugin ${PLUGIN} is off on the broker at ${TARGET}, or could not be checked; partitioned handlers (docs/partitions.md) and the partition tests need it. This script does not change a broker it did not start: enable it with \`rabbitmq-plugins enable ${PLUGIN}\` (no restart needed), or rerun with ENABLE_BROKER_PLUGINS=1 to let it do so"
}

# ---- a. already reachable ---------------------------------------------------
if port_open; then
  log "broker reachable at ${TARGET}"
  ensure_plugins found
  exit 0
fi

if is_local_default; then
  # ---- b. Docker engine -----------------------------------------------------
  if command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; then
    if timeout 10 docker compose version >/dev/null 2>&1; then compose=(docker compose)
    elif command -v docker-compose >/dev/null 2>&1; then compose=(docker-compose)
    else compose=(); fi
    if (( ${#compose[@]} )) \
      && (cd "$ROOT" && timeout "$((WAIT_SECONDS + 300))" "${compose[@]}" up -d --wait rabbitmq </dev/null >&2) \
      && wait_port "docker compose rabbitmq"; then
      # docker-compose.yml mounts scripts/rabbitmq/enabled_plugins, which lists the consistent-hash exchange
      log "started RabbitMQ with docker compose (${TARGET})"
      exit 0
    fi
    err "docker compose could not start rabbitmq; trying other ways"
  fi

  # ---- c. installed rabbitmq-server -----------------------------------------
  if find_rmq rabbitmq-server >/dev/null; then
    start_local_server "started local rabbitmq-server"
    ensure_plugins "$STARTED"
    exit 0
  fi

  # ---- d. auto-install via apt-get ------------------------------------------
  if [[ "${RABBITMQ_AUTO_INSTALL:-}" == 1 && "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    err "installing rabbitmq-server with apt-get (RABBITMQ_AUTO_INSTALL=1)..."
    apt-get update -qq </dev/null >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server </dev/null >&2
    start_local_server "installed rabbitmq-server with apt-get and started it"
    ensure_plugins "$STARTED"
    exit 0
  fi
fi

# ---- e. give up with instructions ---------------------------------------------
cat >&2 <<EOF
ensure-broker: no RabbitMQ reachable at ${TARGET} (AMQP_URL=${MASKED_URL}).
To get a broker, do one of:
  - point AMQP_URL at a reachable broker, e.g. AMQP_URL=amqp://user:pass@host:5672
  - start Docker and rerun (this script runs: docker compose up -d --wait rabbitmq)
  - install RabbitMQ locally: sudo apt-get install rabbitmq-server   (Debian/Ubuntu)
                              brew install rabbitmq                 (macOS)
    or rerun as root with RABBITMQ_AUTO_INSTALL=1 to apt-get install it automatically
  - RabbitMQ 4.0 or 4.3 on this machine, without Docker (as root):
      bash scripts/rabbitmq.sh start 4.3 && eval "\$(bash scripts/rabbitmq.sh env 4.3)"
EOF
if ! is_local_default; then
  echo "ensure-broker: not starting a broker here: only a local amqp:// target on port ${LOCAL_PORT} can be started by this script." >&2
fi
exit 1
