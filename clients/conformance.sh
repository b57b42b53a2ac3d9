#!/usr/bin/env bash
# The official MCP conformance suite and the MCP Inspector CLI against a started broker.
#
#   BROKER_TOKEN=... bash clients/conformance.sh http://127.0.0.1:PORT
#
# Both are pinned in clients/conformance/package.json (installed with `npm ci` into
# clients/conformance/node_modules). Every scenario in clients/conformance/scenarios.txt
# runs at its wire revision; a failing check not named in expected-failures.yml fails
# the run, and so does a named one that passes (a stale entry). The suite cannot send
# an Authorization header, so it talks to clients/auth_proxy.py, which adds the bearer
# and passes every other header (Host and Origin too) through unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
url=$1
: "${BROKER_TOKEN:?the bearer token of the broker under test}"

. clients/lib.sh
dir=clients/conformance
# --ignore-scripts: the Inspector's postinstall only serves a source checkout.
npm_ci_current "$dir" --ignore-scripts
proxy_port=$(free_port)
python3 clients/auth_proxy.py "$proxy_port" "$url" &
proxy_pid=$!
trap 'kill $proxy_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  if python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$proxy_port" 2>/dev/null; then break; fi
  sleep 0.1
done

# Node 20 has no fs.globSync, which the suite's build imports; the loader in
# clients/conformance/node20/ gives the suite the `glob` package's globSync instead.
suite=(node --import "./$dir/node20/register.mjs" "$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js")
echo "suite $(node -p "require('./$dir/node_modules/@modelcontextprotocol/conformance/package.json').version"), node $(node --version)"
results="$target_dir/conformance"
rm -rf "$results"
failed=()
ran=0
while read -r scenario wire _; do
  case "$scenario" in ''|'#'*) continue ;; esac
  ran=$((ran + 1))
  log="$results/$scenario-$wire.log"
  mkdir -p "$results"
  # `localhost`: the suite's DNS-rebinding scenario needs a loopback name in the URL.
  # Extension scenarios (tasks-*) are off the spec timeline: the suite runs them on --force.
  force=()
  case "$scenario" in tasks-*) force=(--force) ;; esac
  if "${suite[@]}" server --url "http://localhost:$proxy_port/mcp" --scenario "$scenario" \
      --spec-version "$wire" "${force[@]}" --expected-failures "$dir/expected-failures.yml" \
      -o "$results/out" >"$log" 2>&1; then
    echo "ok   $scenario @ $wire: $(grep -Eo 'Passed: [0-9]+/[0-9]+[^,]*, [0-9]+ failed' "$log" | tail -1)"
  else
    echo "FAIL $scenario @ $wire"
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E 'FAILURE|stale|unexpected|Error' | head -20
    failed+=("$scenario@$wire")
  fi
done <"$dir/scenarios.txt"
echo "conformance: $ran scenario runs, ${#failed[@]} failed"

echo "== MCP Inspector CLI ($(node -p "require('./$dir/node_modules/@modelcontextprotocol/inspector/package.json').version"))"
inspector=(node "$dir/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" --cli "$url/mcp" --transport http --header "Authorization: Bearer $BROKER_TOKEN" --header "x-agent-api-key: ak_inspector")
# --strict: the Inspector's schema-portability lint prints every finding; the default
# surface must have none.
"${inspector[@]}" --method tools/list --strict >"$target_dir/inspector-list.json" 2>"$target_dir/inspector-lint.txt"
if grep -Eq '^(Warning|Error)' "$target_dir/inspector-lint.txt"; then
  echo "FAIL the Inspector's schema-portability lint:"; cat "$target_dir/inspector-lint.txt"; exit 1
fi
echo "ok   the Inspector's schema-portability lint finds nothing in the default surface"
"${inspector[@]}" --method tools/call --tool-name find_tools --tool-arg 'query=list tasks' --tool-arg service=agent >"$target_dir/inspector-find.json"
"${inspector[@]}" --method tools/call --tool-name call_tool --tool-arg name=agent.list_tasks --tool-arg 'arguments={"limit":2}' >"$target_dir/inspector-call.json"
TARGET_DIR=$target_dir python3 - <<'PY'
import json, os, sys
target = os.environ["TARGET_DIR"]
listed = json.load(open(os.path.join(target, "inspector-list.json")))
names = [t["name"] for t in listed["tools"]]
found = json.load(open(os.path.join(target, "inspector-find.json")))["structuredContent"]
called = json.load(open(os.path.join(target, "inspector-call.json")))["structuredContent"]
checks = [
    ("tools/list shows the default surface", names == ["find_tools", "get_tool_reference", "call_tool"], names),
    ("find_tools ranks agent.list_tasks first", found["data"]["results"][0]["fullName"] == "agent.list_tasks", found["data"]["results"][:1]),
    ("call_tool runs the proxied tool", called["ok"] is True and called["data"] == [{"id": "task_stub"}], called),
]
bad = [label for label, ok, _ in checks if not ok]
for label, ok, detail in checks:
    print(("ok   " if ok else "FAIL ") + label + ("" if ok else f": {detail}"))
sys.exit(1 if bad else 0)
PY

if [ ${#failed[@]} -gt 0 ]; then
  echo "conformance failures outside expected-failures.yml: ${failed[*]}"
  exit 1
fi
