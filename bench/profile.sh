#!/usr/bin/env bash
# Where a proxied call's cost goes, in the two forms bench/README.md and bench/HISTORY.md
# quote:
#
#   bench/profile.sh callgrind [/|/mcp] [OUT]  # instructions per call: valgrind's
#       callgrind over 2,008 calls at 500 req/s on one worker thread, counted only after
#       a warm-up (`--instr-atstart=no`, switched on by `callgrind_control -i on`);
#       prints the count per call and leaves the profile in OUT (default
#       target/bench/callgrind.out) for `callgrind_annotate --inclusive=yes OUT`.
#   bench/profile.sh cpu [/|/mcp]              # CPU per call at saturation: the
#       broker's user and system time (/proc/<pid>/stat) and its voluntary and
#       involuntary context switches (/proc/<pid>/task/*/status) across a 5 s
#       `wrk -t1 -c32` run, after a warm-up run of the same length.
#   bench/profile.sh nginx                     # the same figures for what the broker is
#       compared with: compare.sh's nginx reverse proxy in a process of its own, in front
#       of the same upstream, and that upstream's own CPU per call.
#
# HTTP1_SERVER=hyper (default own) sets the `[server]` `http1_server`: the broker's own
# HTTP/1.1 server for the call endpoints, or hyper's server for everything (an A/B of the two).
# AUTH=token (default key) calls with an OAuth access token instead of the static key:
# nginx also serves an issuer's discovery document and key set made by the `mint`
# example, which prints the token; the broker runs with `[oauth]` naming them.
# LOG=info (default warn) sets TOOL_BROKER_LOG: `info` writes the per-call line (to a file
# here), `warn` does not; BROKER=PATH runs another build of the binary.
# GUARDS=off runs it with every guard rule off (the cost of the guards, side by side).
# POLICIES=50 runs the broker with compare.sh's 50 Cedar policies (`[policy]`, the
# `50 policies` figures), none by default.
# KEY=hub (default header; needs AUTH=token) sends no upstream key header: the user
# stores the key once in the hub (`PUT /hub/keys/hosting`) and each call reads it from
# the store and opens it (decision 012).
#
# The call is compare.sh's: hosting.billing_get_catalog_item_list_v1 against an nginx
# upstream answering the same 331-byte JSON array. Installs nginx-light, wrk and valgrind
# with apt-get when absent. Everything listens on 127.0.0.1 and every run is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
mode=${1:-}
path=${2:-/}
out=${3:-target/bench/callgrind.out}
case $mode in
  callgrind | cpu | nginx) ;;
  *)
    echo "usage: bench/profile.sh callgrind [/|/mcp] [OUT] | bench/profile.sh cpu [/|/mcp] | bench/profile.sh nginx" >&2
    exit 2
    ;;
esac
case $path in
  / | /mcp) ;;
  *) echo "the path is / or /mcp, not $path" >&2; exit 2 ;;
esac

install_missing nginx:nginx-light wrk:wrk valgrind:valgrind
cargo build --release -q -p tool-broker --bin tool-broker --example rate --example mint

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [[ -f $work/nginx.pid ]] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT


up_port=$(free_port)
idp_port=$(free_port)
broker_port=$(free_port)
auth=${AUTH:-key}
key=tb_bench_key
oauth_table=""
if [[ $auth == token ]]; then
  mkdir -p "$work/idp"
  key=$(target/release/examples/mint --issuer "http://127.0.0.1:$idp_port" \
    --audience "http://127.0.0.1:$broker_port/mcp" --out "$work/idp")
  # nginx's workers run as another user: they must read the key set.
  chmod a+x "$work" && chmod -R a+rX "$work/idp"
  oauth_table=$(printf '[oauth]\nissuer = "http://127.0.0.1:%s"\nresource = "http://127.0.0.1:%s/mcp"\n' "$idp_port" "$broker_port")
fi
# compare.sh's answer, so the figures are comparable with its runs.
answer=$(sed -n "s/^answer='\(.*\)'$/\1/p" bench/compare.sh)
{
  nginx_head "$work"
  cat <<EOF
  server {
    listen 127.0.0.1:$up_port;
    location / { default_type application/json; return 200 '$answer'; }
  }
  server {
    listen 127.0.0.1:$idp_port;
    location / { default_type application/json; root $work/idp; }
  }
}
EOF
} > "$work/nginx.conf"
"$nginx_bin" -c "$work/nginx.conf" -p "$work"
wait_for "http://127.0.0.1:$up_port/"

body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hosting.billing_get_catalog_item_list_v1","arguments":{}}}'
headers=("authorization: Bearer $key" "x-hosting-api-key: hk_bench" "content-type: application/json")
[[ $path == /mcp ]] && headers+=("accept: application/json, text/event-stream" "mcp-protocol-version: 2025-11-25")
key_source=${KEY:-header}
vault_line=""
if [[ $key_source == hub ]]; then
  if [[ $auth != token ]]; then
    echo "KEY=hub needs AUTH=token: the hub keeps the keys of users" >&2
    exit 2
  fi
  vault_line='vault_key_env = "TOOL_BROKER_VAULT_KEY"'
  export TOOL_BROKER_VAULT_KEY=bench-vault-key-of-at-least-32-characters
  kept=()
  for h in "${headers[@]}"; do [[ $h == x-hosting-api-key:* ]] || kept+=("$h"); done
  headers=("${kept[@]}")
fi
# The user's key, stored once before any counted call (KEY=hub).
store_key() {
  if [[ $key_source == hub ]]; then
    curl -fs -o /dev/null -X PUT -H "authorization: Bearer $key" -d '{"key":"hk_bench"}' \
      "http://127.0.0.1:$broker_port/hub/keys/hosting"
  fi
}
policy_table=""
if [[ ${POLICIES:-} == 50 ]]; then
  bench_policies "$work/policies"
  policy_table=$(printf '[policy]\ndir = "%s"\n' "$work/policies")
elif [[ -n ${POLICIES:-} ]]; then
  echo "POLICIES is 50 or unset, not $POLICIES" >&2
  exit 2
fi
# GUARDS=off turns every guard rule that ships on off (`[[guards.rule]]`): the same binary
# without guards, for the cost they add (docs/guards.md).
guards_table=""
if [[ ${GUARDS:-} == off ]]; then
  for id in aws-access-key github-token gitlab-token slack-token payments-live-secret \
    google-api-key private-key signed-url card iban invisible-characters; do
    guards_table+=$(printf '\n[[guards.rule]]\nid = "%s"\non = false\n' "$id")
  done
elif [[ -n ${GUARDS:-} ]]; then
  echo "GUARDS is off or unset, not $GUARDS" >&2
  exit 2
fi
url="http://127.0.0.1:$broker_port$path"
serve=("${BROKER:-target/release/tool-broker}" serve --listen "127.0.0.1:$broker_port" --data-dir "$work/data")
http1_server=${HTTP1_SERVER:-own}
export TOOL_BROKER_API_KEY=tb_bench_key TOOL_BROKER_UPSTREAM_HOSTING="http://127.0.0.1:$up_port" TOOL_BROKER_LOG=${LOG:-warn}

if [[ $mode == callgrind ]]; then
  printf '%s\n[server]\nworkers = 1\nhttp1_server = "%s"\n%s\n%s\n%s\n' "$vault_line" "$http1_server" "$oauth_table" "$policy_table" "$guards_table" > "$work/one-worker.toml"
  mkdir -p "$(dirname "$out")"
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
    "${serve[@]}" --config "$work/one-worker.toml" > "$work/valgrind.log" 2>&1 &
  broker=$!
  pids+=("$broker")
  wait_for "http://127.0.0.1:$broker_port/readyz"
  store_key
  rate=(target/release/examples/rate --url "$url" --method POST --body "$body" --connections 8)
  for h in "${headers[@]}"; do rate+=(--header "$h"); done
  "${rate[@]}" --rate 200 --seconds 2 > /dev/null
  callgrind_control -i on "$broker" > /dev/null 2>&1
  # 2,000 calls, and one per connection before the clock starts: 2,008.
  "${rate[@]}" --rate 500 --seconds 4 | grep 'ok=2000 errors=0' >/dev/null || {
    echo "the counted run did not answer 2,000 calls without error" >&2
    exit 1
  }
  callgrind_control -i off "$broker" > /dev/null 2>&1
  kill "$broker"
  wait "$broker" 2>/dev/null || true
  total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  echo "POST $path: $total instructions over 2,008 calls, $((total / 2008)) per call (profile: $out)"
  exit 0
fi

# CPU ticks (user, system) of processes, from their /proc/<pid>/stat files.
ticks_of() { cat "$@" 2>/dev/null | awk '{u += $14; s += $15} END {print u, s}'; }
# Context switches (voluntary, involuntary) of processes, all their threads.
switches_of() {
  for p in "$@"; do cat /proc/"$p"/task/*/status; done |
    awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {n += $2} END {print v, n}'
}

if [[ $mode == nginx ]]; then
  proxy_port=$(free_port)
  mkdir -p "$work/proxy"
  {
    nginx_head "$work/proxy"
    cat <<EOF
  upstream billing { server 127.0.0.1:$up_port; keepalive 64; }
EOF
  nginx_proxy_server "$proxy_port"
  echo "}"
  } > "$work/proxy/nginx.conf"
  "$nginx_bin" -c "$work/proxy/nginx.conf" -p "$work/proxy"
  stop_proxy() { kill "$(cat "$work/proxy/nginx.pid")" 2>/dev/null || true; }
  trap 'stop_proxy; cleanup' EXIT
  wait_for "http://127.0.0.1:$proxy_port/"
  # Every process of each nginx: its master and its workers.
  processes() { echo "$(cat "$1")" $(pgrep -P "$(cat "$1")"); }
  read -ra proxy < <(processes "$work/proxy/nginx.pid")
  read -ra upstream < <(processes "$work/nginx.pid")
  proxy_stat=("${proxy[@]/#//proc/}") && proxy_stat=("${proxy_stat[@]/%//stat}")
  upstream_stat=("${upstream[@]/#//proc/}") && upstream_stat=("${upstream_stat[@]/%//stat}")
  load() {
    WRK_METHOD=POST WRK_BODY=$body WRK_HEADERS="content-type: application/json" \
      wrk -t1 -c32 -d5s -s bench/wrk.lua "http://127.0.0.1:$proxy_port/api/billing/v1/catalog"
  }
  load > /dev/null # warm-up
  read -r pu0 ps0 < <(ticks_of "${proxy_stat[@]}")
  read -r uu0 us0 < <(ticks_of "${upstream_stat[@]}")
  read -r v0 n0 < <(switches_of "${proxy[@]}")
  calls=$(load | awk '/requests in/ {print $1}')
  read -r pu1 ps1 < <(ticks_of "${proxy_stat[@]}")
  read -r uu1 us1 < <(ticks_of "${upstream_stat[@]}")
  read -r v1 n1 < <(switches_of "${proxy[@]}")
  awk -v n="$calls" -v t=$((1000000 / $(getconf CLK_TCK))) -v pu=$((pu1 - pu0)) -v ps=$((ps1 - ps0)) \
    -v uu=$((uu1 - uu0)) -v us=$((us1 - us0)) -v v=$((v1 - v0)) -v i=$((n1 - n0)) \
    'BEGIN {printf "nginx proxy: %d calls in 5 s; per call: user %.1f us, system %.1f us, context switches %.2f voluntary, %.2f involuntary; its upstream: user %.1f us, system %.1f us\n", n, pu * t / n, ps * t / n, v / n, i / n, uu * t / n, us * t / n}'
  exit 0
fi

printf '%s\n[server]\nhttp1_server = "%s"\n%s\n%s\n%s\n' "$vault_line" "$http1_server" "$oauth_table" "$policy_table" "$guards_table" > "$work/serve.toml"
"${serve[@]}" --config "$work/serve.toml" > "$work/broker.log" 2>&1 &
broker=$!
pids+=("$broker")
wait_for "http://127.0.0.1:$broker_port/readyz"
store_key
joined=$(IFS='^'; echo "${headers[*]}")
load() { WRK_METHOD=POST WRK_BODY=$body WRK_HEADERS=$joined wrk -t1 -c32 -d5s -s bench/wrk.lua "$url"; }
ticks() { awk '{print $14, $15}' "/proc/$broker/stat"; }
switches() {
  cat /proc/"$broker"/task/*/status |
    awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {n += $2} END {print v, n}'
}
load > /dev/null # warm-up
read -r u0 s0 < <(ticks)
read -r v0 n0 < <(switches)
calls=$(load | awk '/requests in/ {print $1}')
read -r u1 s1 < <(ticks)
read -r v1 n1 < <(switches)
tick_us=$((1000000 / $(getconf CLK_TCK)))
awk -v n="$calls" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v t="$tick_us" -v v=$((v1 - v0)) -v i=$((n1 - n0)) -v p="$path" \
  'BEGIN {printf "POST %s: %d calls in 5 s; per call: user %.1f us, system %.1f us, context switches %.2f voluntary, %.2f involuntary\n", p, n, u * t / n, s * t / n, v / n, i / n}'
