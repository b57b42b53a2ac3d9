#!/usr/bin/env bash
# Real clients against a started broker, all on 127.0.0.1:
#   1. the official MCP Python SDK (clients/mcp_client.py), handshake and discover-first modes;
#      then the official MCP conformance suite and the MCP Inspector CLI (clients/conformance.sh);
#   2. openapi-spec-validator on the served GET /openapi.json;
#   3. schemathesis against the projection, bounded: no 5xx, every answer matching its
#      documented schema.
# Every upstream is clients/stub_upstream.py. Installs its Python packages into
# target/client-venv (clients/requirements.txt). See docs/mcp.md.
set -euo pipefail
cd "$(dirname "$0")/.."

. clients/lib.sh
venv=$(client_venv)

ensure_broker
stub_port=$(free_port)
broker_port=$(free_port)
token=tb_client_check_token_0123456789
token_all=tb_client_check_all_tools_0123456789
token_human=tb_client_check_human_writes_0123456789
python3 clients/stub_upstream.py "$stub_port" &
stub_pid=$!
upstreams=()
for service in agent crm hosting imagegen leads media payments portal scraper; do
  upstreams+=("TOOL_BROKER_UPSTREAM_$(echo "$service" | tr a-z A-Z)=http://127.0.0.1:$stub_port")
done
config=$(mktemp)
cat >"$config" <<TOML
approval_key_env = "TOOL_BROKER_APPROVAL_KEY"   # seals what approvers see (human mode)
# TOOL_BROKER_API_KEY gets the default toolset (the discovery tools); this key lists all.
[[keys]]
name = "all-tools"
sha256 = "$(printf %s "$token_all" | sha256sum | cut -d' ' -f1)"
toolset = "all"
# Writes of this key are approved by a person: elicitation in the SDK check below.
[[keys]]
name = "human-writes"
sha256 = "$(printf %s "$token_human" | sha256sum | cut -d' ' -f1)"
confirmation = "human"
[[approvers]]
name = "client-check"
sha256 = "$(printf %s approver-client-check | sha256sum | cut -d' ' -f1)"
[settings.imagegen]
poll_interval_ms = 10
[settings.agent]
poll_interval_ms = 10
[settings.media]
drive_folder_id = "folder-client-check"
TOML
env TOOL_BROKER_API_KEY="$token" TOOL_BROKER_APPROVAL_KEY=client-check-approval-key-0123456789abcdef "${upstreams[@]}" \
  "$broker_bin" serve --listen "127.0.0.1:$broker_port" --config "$config" >"$target_dir/client-broker.log" 2>&1 &
broker_pid=$!
trap 'kill $stub_pid $broker_pid 2>/dev/null || true; rm -f "$config"' EXIT
url="http://127.0.0.1:$broker_port"
fetch() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=30).read().decode())' "$1"; }
for _ in $(seq 1 100); do
  if fetch "$url/readyz" >/dev/null 2>&1; then break; fi
  sleep 0.1
done

echo "== MCP Python SDK ($("$venv/bin/pip" show mcp | awk '/^Version/ {print $2}'))"
BROKER_URL="$url" BROKER_TOKEN="$token" BROKER_TOKEN_ALL="$token_all" BROKER_TOKEN_HUMAN="$token_human" \
  STUB_URL="http://127.0.0.1:$stub_port" "$venv/bin/python" clients/mcp_client.py

echo "== the official MCP conformance suite and the MCP Inspector CLI"
BROKER_TOKEN="$token" bash clients/conformance.sh "$url"

echo "== the CLI on the binary's own catalog, outside a checkout, into a closed pipe"
bin="$broker_bin"
( cd "$(mktemp -d)" && "$bin" catalog list --format json 2>"$target_dir/cli-pipe.err" | head -c 100 >/dev/null; echo "${PIPESTATUS[0]}" >"$target_dir/cli-pipe.rc" )
if [ "$(cat "$target_dir/cli-pipe.rc")" != 0 ] || grep -q panicked "$target_dir/cli-pipe.err" || ! grep -q "catalog embedded" "$target_dir/cli-pipe.err"; then
  echo "catalog list outside a checkout into a closed pipe failed:"; cat "$target_dir/cli-pipe.err"; exit 1
fi
echo "ok: catalog list read the embedded catalog and ended quietly on a closed pipe"

echo "== openapi-spec-validator on GET /openapi.json"
fetch "$url/openapi.json" >"$target_dir/openapi.json"
"$venv/bin/openapi-spec-validator" "$target_dir/openapi.json"

echo "== schemathesis against the projection (bounded)"
# Every operation of every service, with every service's key header; tools that wait on
# jobs are left out (they poll until their wait ends). Bounded and reproducible: two
# examples an operation from a fixed seed, so a run that fails fails again with the same
# requests. Its worker threads get the stack the main thread has (64 MiB): a generator
# that recursed deep once ended the process with SIGSEGV on the default 8 MiB.
(
  ulimit -s 65536 2>/dev/null || true
  exec "$venv/bin/schemathesis" run "$url/openapi.json" \
    --header "Authorization: Bearer $token" \
    --header "x-agent-api-key: ak_schemathesis" \
    --header "x-imagegen-api-key: ik_schemathesis" \
    --header "x-media-api-key: mk_schemathesis" \
    --header "x-hosting-api-key: hk_schemathesis" \
    --header "x-leads-api-key: lk_schemathesis" \
    --header "x-crm-api-key: ck_schemathesis" \
    --header "x-scraper-api-key: sk_schemathesis" \
    --header "x-payments-api-key: pk_schemathesis" \
    --header "x-crm-location-id: loc_schemathesis" \
    --checks not_a_server_error,response_schema_conformance,content_type_conformance \
    --exclude-operation-id-regex 'and-wait|wait-briefly|wait-for-job|check-task-progress' \
    --max-examples 2 \
    --seed 20261129 \
    --workers 2 \
    --request-timeout 20 \
    --no-color \
    --mode positive
)

echo "== the broker's log, written to a file"
# stderr was a file: no colour codes (engine/telemetry/src/telemetry/logging.rs), and the calls were logged.
if grep -q $'\x1b\[' "$target_dir/client-broker.log"; then
  echo "FAIL the broker wrote colour codes into its log file"; exit 1
fi
grep -q "tool call" "$target_dir/client-broker.log" || { echo "FAIL no tool call in the broker's log"; exit 1; }
# Start-up is reported on the listening line (bench/compare.sh reads `ready_ms` there).
grep -q -E "tool-broker listening .*compile_ms=[0-9]+ ready_ms=[0-9]+ start_cache=\"(read|written)\"" "$target_dir/client-broker.log" ||
  { echo "FAIL the listening line does not report compile_ms, ready_ms and start_cache"; exit 1; }
echo "ok   no colour codes in the log file; tool calls logged; start-up figures on the listening line"
