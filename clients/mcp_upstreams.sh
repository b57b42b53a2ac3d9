#!/usr/bin/env bash
# MCP servers nobody here wrote, behind the broker as catalog services
# (docs/mcp-upstreams.md): the reference server-everything (npm, pinned in
# clients/mcp-upstreams/package-lock.json) over stdio and over Streamable HTTP, and the
# reference time server (PyPI, pinned below) over stdio. Each is imported with
# `catalog import-mcp` into a scratch catalog root, locked and verified; then a started
# broker is called through `POST /` and `/mcp` (clients/mcp_upstreams.py): reads, a
# write that needs its confirmation, a policy on an MCP tool's argument, the stdio
# server's environment kept to what `[mcp] env` names, content blocks, the servers'
# progress and questions passed on to an SDK caller over both transports, the server
# killed mid-call and started again. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
. clients/lib.sh
ensure_broker
npm_ci_current clients/mcp-upstreams
venv=$(client_venv)
time_venv=$target_dir/mcp-time-venv
if [ ! -x "$time_venv/bin/mcp-server-time" ]; then
  python3 -m venv "$time_venv"
  "$time_venv/bin/pip" install -q --disable-pip-version-check mcp-server-time==2026.10.19
fi

everything=$PWD/clients/mcp-upstreams/node_modules/@modelcontextprotocol/server-everything/dist/index.js
root=$(mktemp -d)
cp -r catalog rules templates "$root"/
mkdir -p "$root/import"
http_port=$(free_port)
broker_port=$(free_port)
PORT=$http_port node "$everything" streamableHttp >"$target_dir/mcp-everything-http.log" 2>&1 &
http_pid=$!
broker_pid=""
trap 'kill $http_pid ${broker_pid:-} 2>/dev/null || true; rm -rf "$root"' EXIT

service() { # ID, then the [mcp] table's lines
  local id=$1
  shift
  mkdir -p "$root/catalog/$id"
  {
    printf 'id = "%s"\ntitle = "%s"\ndescription = "The reference MCP server %s."\n' "$id" "$id" "$id"
    printf 'catalog_version = "2026-11-29.1"\nversion_format = "dashed_date"\n\n[defaults]\ntimeout_ms = 20000\n\n[mcp]\n'
    printf '%s\n' "$@"
  } >"$root/catalog/$id/service.toml"
}
service everything "command = [\"node\", \"$everything\", \"stdio\"]" 'env = ["EVERYTHING_SHOWN"]'
service everything_http "url = \"http://127.0.0.1:$http_port/mcp\""
service time "command = [\"$time_venv/bin/mcp-server-time\", \"--local-timezone\", \"UTC\"]"
# A reviewer's overrides: server-everything's `get-sum` is kept, renamed; its question
# to the person is a read (it changes nothing).
for id in everything everything_http; do
  cat >"$root/import/$id.toml" <<TOML
service = "$id"
[tool.trigger-elicitation-request]
risk = "read"
TOML
done
cat >>"$root/import/everything.toml" <<'TOML'
[tool.get-sum]
name = "add_numbers"
TOML
wait_for_port() { for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
wait_for_port "$http_port" || { echo "server-everything over HTTP did not start"; cat "$target_dir/mcp-everything-http.log"; exit 1; }

echo "== import-mcp, lock, verify"
for id in everything everything_http time; do
  "$broker_bin" catalog import-mcp "$id" --catalog-dir "$root"
done
"$broker_bin" catalog lock --catalog-dir "$root" >/dev/null
"$broker_bin" catalog verify --upstreams --catalog-dir "$root"
for id in everything everything_http time; do
  "$broker_bin" catalog diff-mcp "$id" --catalog-dir "$root"
done
grep -q 'name = "add_numbers"' "$root/catalog/everything/mcp.toml"

mkdir -p "$root/policies"
cat >"$root/policies/mcp.cedar" <<'CEDAR'
@id("everyone")
permit(principal, action, resource);

@id("no-secret-plans")
forbid(principal, action == Action::"everything.echo", resource)
when { context.arguments.message like "*secret plan*" };
CEDAR
config=$root/broker.toml
cat >"$config" <<TOML
[policy]
dir = "$root/policies"
TOML
token=tb_mcp_upstreams_check_0123456789
env TOOL_BROKER_API_KEY="$token" EVERYTHING_SHOWN=shown-to-the-server SECRET_OF_THE_BROKER=never-passed-on \
  "$broker_bin" serve --listen "127.0.0.1:$broker_port" --catalog-dir "$root" --config "$config" --data-dir "$root/data" \
  >"$target_dir/mcp-upstreams-broker.log" 2>&1 &
broker_pid=$!
url="http://127.0.0.1:$broker_port"
wait_ready "$url" || { cat "$target_dir/mcp-upstreams-broker.log"; exit 1; }

echo "== calls through the broker (MCP Python SDK $("$venv/bin/pip" show mcp | awk '/^Version/ {print $2}'))"
BROKER_URL="$url" BROKER_TOKEN="$token" "$venv/bin/python" clients/mcp_upstreams.py || {
  echo "-- broker log"; tail -50 "$target_dir/mcp-upstreams-broker.log"; exit 1;
}
if grep -q "never-passed-on" "$target_dir/mcp-upstreams-broker.log"; then
  echo "a value of the broker's environment reached its log"; exit 1
fi
