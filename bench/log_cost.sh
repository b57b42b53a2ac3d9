#!/usr/bin/env bash
# What the default per-call log line costs a proxied read: the same binary at
# TOOL_BROKER_LOG=info (one line per call, written to a file) against warn (none),
# alternated, ROUNDS rounds of `bench/profile.sh cpu` (wrk -t1 -c32, 5 s after a 5 s
# warm-up; calls and CPU per call). Prints each round's throughput ratio info/warn and
# their median.
#
#   bench/log_cost.sh [ROUNDS] [PATH]      (default 3 rounds, /)
#   BROKER=path/to/tool-broker bench/log_cost.sh   # another build of the binary
#
# Loopback only, bounded; installs nginx-light and wrk where absent (bench/profile.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
path=${2:-/}
ratios=()
for round in $(seq 1 "$rounds"); do
  declare -A calls=()
  for level in info warn; do
    line=$(LOG=$level bench/profile.sh cpu "$path" | tail -1)
    echo "round $round, $level: $line"
    calls[$level]=$(awk '{print $3}' <<< "$line")
  done
  ratio=$(awk -v i="${calls[info]}" -v w="${calls[warn]}" 'BEGIN {printf "%.3f", i / w}')
  echo "round $round: info/warn = $ratio"
  ratios+=("$ratio")
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
echo "info/warn throughput, $rounds rounds: ${ratios[*]}; median $median"
