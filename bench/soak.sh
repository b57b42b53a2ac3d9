#!/usr/bin/env bash
# A fault-injecting soak, run by hand: 60 s at saturation through the broker
# (release build) in front of bench/fault_upstream.py, a loopback upstream that answers
# a fixed cycle of good answers, 500s and 503s, resets mid-body, non-JSON, bodies cut
# short, chunked garbage, stalls (2 s, and 35 s past the upstream timeout), oversized
# answers and a head that never ends.
#
#   bench/soak.sh [SECONDS]     (default 60; a 10 s warm-up comes first)
#
# Reports: panics in the broker's log; every answer an envelope (`"ok":true` or a
# classification) and no 500, counted by wrk (bench/soak.lua); the broker's RSS, open
# file descriptors, threads and TCP connections after the warm-up, right after the run,
# and 40 s later (the stalled upstream calls time out at 30 s). Installs wrk where
# absent. Loopback only, bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
seconds=${1:-60}
install_missing wrk:wrk
cargo build --release -q -p tool-broker --bin tool-broker

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

up_port=$(free_port)
broker_port=$(free_port)
python3 bench/fault_upstream.py "$up_port" &
pids+=($!)
export TOOL_BROKER_API_KEY=tb_soak_key TOOL_BROKER_UPSTREAM_HOSTING="http://127.0.0.1:$up_port"
target/release/tool-broker serve --listen "127.0.0.1:$broker_port" --data-dir "$work/data" \
  > "$work/broker.log" 2>&1 &
broker=$!
pids+=("$broker")
wait_for "http://127.0.0.1:$broker_port/readyz"

body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hosting.billing_get_catalog_item_list_v1","arguments":{}}}'
headers="authorization: Bearer tb_soak_key^x-hosting-api-key: hk_soak^content-type: application/json"
load() { # SECONDS
  WRK_BODY=$body WRK_HEADERS=$headers wrk -t2 -c64 -d"$1"s --timeout 40s -s bench/soak.lua \
    "http://127.0.0.1:$broker_port/"
}
state() { # LABEL
  local rss fds threads conns
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$broker/status")
  threads=$(awk '/^Threads/ {print $2}' "/proc/$broker/status")
  fds=$(find "/proc/$broker/fd" -mindepth 1 -maxdepth 1 | wc -l)
  conns=$(grep -c " 01 " <(awk -v p="$(printf '%04X' "$up_port")" '$3 ~ ":"p"$"' /proc/net/tcp) || true)
  printf '%-22s rss %6d KiB  fds %4d  threads %3d  upstream connections %3d\n' "$1" "$rss" "$fds" "$threads" "$conns"
}

state "started"
load 10 > /dev/null
state "after a 10 s warm-up"
load "$seconds" | tee "$work/load.txt" | sed -n '/Requests\/sec/p;/answers/p;/classifications/p'
state "right after the run"
sleep 40
state "40 s later"
panics=$(grep -c "panicked" "$work/broker.log" || true)
echo "panics in the broker's log: $panics"
grep -q "unclassified=0 status500=0" "$work/load.txt" || { echo "an answer was not a classified envelope, or a 500" >&2; exit 1; }
[[ $panics == 0 ]] || exit 1
