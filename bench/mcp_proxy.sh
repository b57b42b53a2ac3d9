#!/usr/bin/env bash
# A proxied MCP call's latency and CPU against calling the server directly: the reference
# server-everything (clients/mcp-upstreams, pinned) over Streamable HTTP, imported as the
# catalog service `everything_http` of a scratch catalog root, then `echo` called in turn
# directly, through `POST /` and through `/mcp` (bench/mcp_proxy.py). Loopback only.
#   BROKER=target/release/tool-broker CALLS=2000 bench/mcp_proxy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. clients/lib.sh
broker=${BROKER:-$target_dir/release/tool-broker}
[ -x "$broker" ] || { echo "no broker at $broker: cargo build --release first, or BROKER=PATH"; exit 1; }
npm_ci_current clients/mcp-upstreams
everything=$PWD/clients/mcp-upstreams/node_modules/@modelcontextprotocol/server-everything/dist/index.js
root=$(mktemp -d)
cp -r catalog rules templates "$root"/
server_port=$(free_port)
broker_port=$(free_port)
PORT=$server_port node "$everything" streamableHttp >/dev/null 2>&1 &
server_pid=$!
broker_pid=""
trap 'kill $server_pid ${broker_pid:-} 2>/dev/null || true; rm -rf "$root"' EXIT
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$server_port") 2>/dev/null && break; sleep 0.1; done
mkdir -p "$root/catalog/everything_http"
printf 'id = "everything_http"\ntitle = "everything"\ndescription = "The reference MCP server."\ncatalog_version = "2026-11-29.1"\nversion_format = "dashed_date"\n\n[mcp]\nurl = "http://127.0.0.1:%s/mcp"\n' \
  "$server_port" >"$root/catalog/everything_http/service.toml"
"$broker" catalog import-mcp everything_http --catalog-dir "$root" >/dev/null 2>&1
"$broker" catalog lock --catalog-dir "$root" >/dev/null 2>&1
token=tb_bench_mcp_proxy_0123456789
TOOL_BROKER_LOG=warn TOOL_BROKER_API_KEY=$token "$broker" serve --listen "127.0.0.1:$broker_port" \
  --catalog-dir "$root" --data-dir "$root/data" >/dev/null 2>&1 &
broker_pid=$!
wait_ready "http://127.0.0.1:$broker_port"
echo "$(date -u +%F) $(git rev-parse --short HEAD) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
BROKER_ADDR=127.0.0.1:$broker_port SERVER_ADDR=127.0.0.1:$server_port BROKER_TOKEN=$token \
  BROKER_PID=$broker_pid SERVER_PID=$server_pid python3 bench/mcp_proxy.py
