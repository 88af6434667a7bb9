# Sourced by scripts that run several independent checks (scripts/test-consumers.sh, scripts/node-matrix.sh): each check
# runs whatever the others returned, and the script exits with the first failure's code after a closing line
# "<label>: N passed, N failed".
#   tally_run <label> <name> <command...>   runs one check (stdin closed), prints its outcome and time
#   tally_finish <label>                    prints the closing line; returns the first failure's exit code
tally_rc=0
tally_passed=0
tally_failed=0

tally_run() {
  local label="$1" name="$2" start=$SECONDS check_rc=0
  shift 2
  "$@" </dev/null || check_rc=$?
  if ((check_rc == 0)); then
    tally_passed=$((tally_passed + 1))
    echo "$label: $name passed in $((SECONDS - start))s"
  else
    tally_failed=$((tally_failed + 1))
    echo "$label: $name FAILED with exit code $check_rc in $((SECONDS - start))s"
    ((tally_rc != 0)) || tally_rc=$check_rc
  fi
}

tally_finish() {
  echo "$1: $tally_passed passed, $tally_failed failed"
  return "$tally_rc"
}
