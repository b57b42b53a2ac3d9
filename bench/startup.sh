#!/usr/bin/env bash
# Start-up with the whole embedded catalog: spawn to the first accepted connection (the
# broker listens once the catalog is compiled and the store open), probed by a bash
# builtin every 2 ms so that no probe process competes with the compile for the cores;
# then /readyz must answer. Each binary is started ROUNDS times in turn with the others:
#
#   cold  a fresh data folder every start (a first start: the whole compile);
#   warm  one data folder kept across starts (a restart: the start cache is read,
#         crate::catalog::start_cache), after one start that wrote it.
#
#   bench/startup.sh [ROUNDS] [BINARY...]   (default 7 rounds, target/release/tool-broker)
#
# Prints every start's milliseconds and the median per binary and kind. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
rounds=${1:-7}
shift || true
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=(target/release/tool-broker)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One start of BINARY with DATA as its data folder: prints the milliseconds to listening.
start_once() { # BINARY DATA
  local port pid t0 ms
  port=$(free_port)
  t0=$(date +%s%N)
  TOOL_BROKER_API_KEY=tb_bench_key TOOL_BROKER_LOG=warn "$1" serve \
    --listen "127.0.0.1:$port" --data-dir "$2" >"$work/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 5000); do
    if { : >"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then break; fi
    sleep 0.002
  done
  ms=$((($(date +%s%N) - t0) / 1000000))
  curl -fs -o /dev/null "http://127.0.0.1:$port/readyz" || { echo "not ready:" >&2; cat "$work/log" >&2; exit 1; }
  # Stopped once ready and its start cache written (it writes it after listening).
  sleep 0.3
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "$ms"
}


declare -A cold warm
for b in "${!binaries[@]}"; do
  start_once "${binaries[$b]}" "$work/warm$b" >/dev/null
done
for round in $(seq 1 "$rounds"); do
  for b in "${!binaries[@]}"; do
    cold[$b]+="$(start_once "${binaries[$b]}" "$work/cold$b-$round") "
    warm[$b]+="$(start_once "${binaries[$b]}" "$work/warm$b") "
  done
done
for b in "${!binaries[@]}"; do
  # shellcheck disable=SC2086
  echo "${binaries[$b]}: cold ${cold[$b]}(median $(median ${cold[$b]})); warm ${warm[$b]}(median $(median ${warm[$b]}))"
done
