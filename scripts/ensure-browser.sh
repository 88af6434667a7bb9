#!/usr/bin/env bash
# Make sure Debian's headless-capable Chromium is installed for the page's browser tests.
#
# playwright-core drives it (executablePath /usr/bin/chromium); `npx playwright install` would download a browser
# build of its own, which cannot be fetched here, so the distribution's package is the one we use.
#   a. /usr/bin/chromium exists (or CHROMIUM_PATH points at a binary) -> nothing to do
#   b. root + apt-get -> apt-get install -y chromium (non-interactive)
#   c. otherwise -> explain how to install it, exit 1
# Safe to run repeatedly.
set -euo pipefail

CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
log() { printf 'ensure-browser: %s\n' "$*"; }
err() { printf 'ensure-browser: %s\n' "$*" >&2; }

if [[ -x "$CHROMIUM" ]]; then
  log "chromium present at ${CHROMIUM}"
  exit 0
fi

if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
  err "installing chromium with apt-get..."
  export DEBIAN_FRONTEND=noninteractive
  # An old or missing package list finds nothing: update once, then install without prompts. dpkg's output goes to a
  # log, shown only on failure; another apt run holding the lock is waited for rather than failed on.
  apt_log="$(mktemp -t ensure-browser-apt.XXXXXX)"
  if ! { apt-get -o DPkg::Lock::Timeout=300 update -qq && \
         apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends chromium; } </dev/null >"$apt_log" 2>&1; then
    cat "$apt_log" >&2
    err "apt-get could not install chromium (log above)"
    exit 1
  fi
  rm -f "$apt_log"
  if [[ -x "$CHROMIUM" ]]; then
    log "installed chromium (${CHROMIUM})"
    exit 0
  fi
  err "apt-get installed chromium but ${CHROMIUM} is still missing; set CHROMIUM_PATH to the binary"
  exit 1
fi

cat >&2 <<MSG
ensure-browser: no Chromium at ${CHROMIUM}.
Install it, then rerun the tests:
  sudo apt-get install chromium          (Debian/Ubuntu)
or point CHROMIUM_PATH at a Chromium or Chrome binary.
MSG
exit 1
