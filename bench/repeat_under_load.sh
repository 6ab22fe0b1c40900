#!/usr/bin/env bash
# Run some tests RUNS times in a row under a background load of N CPU-burning processes; stop
# at the first failing run. Prints each run's outcome, wall time and the load average.
#   bash bench/repeat_under_load.sh RUNS N_BURNERS PYTEST_ARGS...
# e.g. bash bench/repeat_under_load.sh 10 8 tests/integration/test_interruption.py -n 0
# Uses the python on PATH (a venv with ragmeter's test extra installed).
set -u
runs=$1
burners=$2
shift 2
pids=()
for _ in $(seq "$burners"); do
  timeout 21600 sh -c 'while :; do :; done' &
  pids+=($!)
done
stop_burners() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done; }
trap stop_burners EXIT
passed=0
for run in $(seq "$runs"); do
  started=$(date +%s)
  log=$(mktemp)
  python -m pytest -q -p no:cacheprovider "$@" >"$log" 2>&1
  status=$?
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "run $run/$runs: exit=$status wall=$(( $(date +%s) - started ))s load1=$load $(tail -1 "$log")"
  if [ "$status" -ne 0 ]; then
    echo "failed; its log: $log"
    exit "$status"
  fi
  rm -f "$log"
  passed=$((passed + 1))
done
echo "$passed of $runs runs passed in a row with $burners burners"
