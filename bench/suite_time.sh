#!/usr/bin/env bash
# The test suite's wall time as CI runs it (.ci/run in a fresh clone, fresh virtual environment),
# on an idle machine or under a background load of N CPU-burning processes.
#   bash bench/suite_time.sh [N_BURNERS] [LOG]
# The burners run in this script's own session, so the scheduler shares the CPU between them
# and the suite's processes one process at a time (no autogroup of their own to shelter the
# suite); they stop with the suite, or after 3 hours at most.
set -u
burners=${1:-0}
log=${2:-/tmp/ragmeter-suite-$burners.log}
here=$(cd "$(dirname "$0")/.." && pwd)
clone=$(mktemp -d)/ragmeter
git clone -q "$here" "$clone"
[ -d "$here/../shared" ] && ln -s "$here/../shared" "$(dirname "$clone")/shared"
pids=()
for _ in $(seq "$burners"); do
  timeout 10800 sh -c 'while :; do :; done' &
  pids+=($!)
done
samples=$(mktemp)
(while :; do cut -d' ' -f1 /proc/loadavg >>"$samples"; sleep 60; done) &
sampler=$!
started=$(date +%s)
(cd "$clone" && CI=true bash .ci/run) >"$log" 2>&1
status=$?
elapsed=$(( $(date +%s) - started ))
kill "$sampler" 2>/dev/null
for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
load=$(awk '{ total += $1 } END { if (NR) printf "%.1f", total / NR }' "$samples")
echo "burners=$burners exit=$status wall=${elapsed}s mean_load1=$load log=$log"
grep -E "^dependencies:|passed|failed" "$log" | tail -3
exit "$status"
