#!/usr/bin/env bash
# Make sure Redis and PostgreSQL are reachable for the idempotency tests, starting local ones if we can.
# The broker has its own script (ensure-broker.sh); `npm test` and .ci/run call both.
#
# Redis:       REDIS_URL (default redis://127.0.0.1:6379). Not reachable and local: redis-server --daemonize.
# PostgreSQL:  POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test). Not reachable and local:
#              pg_ctlcluster <version> main start; then the database of the URL is created if missing.
# Only a target on this machine is started; a remote one that is down is reported. Every wait is bounded by
# SERVICES_WAIT_SECONDS (default 30). Safe to run repeatedly; never stops or restarts a running service.
set -euo pipefail

REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
POSTGRES_URL="${POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}"
WAIT_SECONDS="${SERVICES_WAIT_SECONDS:-30}"
[[ "$WAIT_SECONDS" =~ ^[0-9]+$ ]] || WAIT_SECONDS=30

log() { printf 'ensure-services: %s\n' "$*"; }
err() { printf 'ensure-services: %s\n' "$*" >&2; }

# host_port <url> <default port>: prints "host port" of a URL (user:password@ and /path stripped)
host_port() {
  local rest="${1#*://}"
  rest="${rest%%[/?#]*}"
  rest="${rest##*@}"
  local host="${rest%%:*}" port=""
  [[ "$rest" == *:* ]] && port="${rest##*:}"
  printf '%s %s\n' "${host:-127.0.0.1}" "${port:-$2}"
}

port_open() { timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" >/dev/null 2>&1; }

wait_port() {  # wait_port <what> <host> <port>
  local deadline=$((SECONDS + WAIT_SECONDS))
  until port_open "$2" "$3"; do
    if ((SECONDS >= deadline)); then
      err "$1 did not accept connections on $2:$3 within ${WAIT_SECONDS}s"
      return 1
    fi
    sleep 0.5
  done
}

is_local() { case "${1,,}" in localhost | 127.0.0.1 | ::1) return 0 ;; *) return 1 ;; esac; }

rc=0

# ---- Redis --------------------------------------------------------------------
read -r redis_host redis_port < <(host_port "$REDIS_URL" 6379)
if port_open "$redis_host" "$redis_port"; then
  log "Redis reachable at ${redis_host}:${redis_port}"
elif is_local "$redis_host" && command -v redis-server >/dev/null 2>&1; then
  # No persistence: the tests need none, and a CI machine's disk stays clean.
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$redis_port" --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log </dev/null >/dev/null
  if wait_port "redis-server" "$redis_host" "$redis_port"; then log "started redis-server (${redis_host}:${redis_port})"; else rc=1; fi
else
  err "no Redis at ${redis_host}:${redis_port} and none to start here: install redis-server, or set REDIS_URL"
  rc=1
fi

# ---- PostgreSQL -----------------------------------------------------------------
read -r pg_host pg_port < <(host_port "$POSTGRES_URL" 5432)
if port_open "$pg_host" "$pg_port"; then
  log "PostgreSQL reachable at ${pg_host}:${pg_port}"
elif is_local "$pg_host" && command -v pg_ctlcluster >/dev/null 2>&1 && [[ -d /etc/postgresql ]]; then
  version="$(ls /etc/postgresql | sort -V | tail -n 1)"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start </dev/null || true # fails harmlessly if it runs
  if wait_port "PostgreSQL ${version}" "$pg_host" "$pg_port"; then log "started PostgreSQL ${version} (${pg_host}:${pg_port})"; else rc=1; fi
else
  err "no PostgreSQL at ${pg_host}:${pg_port} and none to start here: install postgresql, or set POSTGRES_URL"
  rc=1
fi
# The database of the URL, created if missing (the tests create their tables themselves).
if ((rc == 0)) && command -v psql >/dev/null 2>&1; then
  db="${POSTGRES_URL##*/}"
  db="${db%%\?*}"
  if [[ -n "$db" && "$db" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
    admin_url="${POSTGRES_URL%/*}/postgres"
    if ! psql "$admin_url" -tAc "SELECT 1 FROM pg_database WHERE datname = '${db}'" 2>/dev/null | grep -q 1; then
      psql "$admin_url" -qc "CREATE DATABASE \"${db}\"" >/dev/null 2>&1 && log "created database ${db}" || err "could not create database ${db}"
    fi
  fi
fi
exit "$rc"
