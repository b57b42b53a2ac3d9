#!/usr/bin/env bash
# The client guide run (docs/clients.md): each client connected to a started broker with
# the config the guide gives, pinned in clients/agents/package.json (Claude Code, Codex,
# Gemini CLI, mcp-remote, the MCP TypeScript SDK) and clients/requirements.txt (the
# OpenAI Agents SDK, the MCP Python SDK); clients/agents/check.mjs reads the snippets
# from the guide and checks what each client reports. Twice: a broker with the default
# toolset, then one with `toolset = "all"`; both take TOOL_BROKER_API_KEY and, with
# [oauth] naming the test provider (clients/oauth/provider.mjs), people's tokens, which
# mcp-remote and Codex obtain through the whole flow (sign-in and consent in Debian's
# headless Chromium). Installs Node, npm packages, chromium and the Python packages
# where absent. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

. clients/lib.sh
need_browser_and_npm clients/oauth
need_browser_and_npm clients/agents
venv=$(client_venv)

ensure_broker
idp_port=$(free_port)
broker_port=$(free_port)
url="http://127.0.0.1:$broker_port"
work=$(mktemp -d)
node clients/oauth/provider.mjs "$idp_port" "$url/mcp" >"$target_dir/agents-provider.log" 2>&1 &
idp_pid=$!
trap 'kill $idp_pid ${broker_pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT
wait_for "http://127.0.0.1:$idp_port/.well-known/openid-configuration"
key="tbk_agents_check_$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
for toolset in discovery all; do
  mkdir -p "$work/$toolset"
  cat >"$work/$toolset/config.toml" <<TOML
toolset = "$toolset"
[oauth]
issuer = "http://127.0.0.1:$idp_port"
resource = "$url/mcp"
TOML
  TOOL_BROKER_API_KEY="$key" "$broker_bin" serve --listen "127.0.0.1:$broker_port" \
    --config "$work/$toolset/config.toml" --data-dir "$work/$toolset/data" \
    >"$target_dir/agents-broker-$toolset.log" 2>&1 &
  broker_pid=$!
  wait_ready "$url"
  BROKER_URL="$url" TOOLSET="$toolset" TOOL_BROKER_API_KEY="$key" VENV="$venv" WORK="$work" \
    node clients/agents/check.mjs
  kill "$broker_pid"
  wait "$broker_pid" 2>/dev/null || true
  if grep -qF "$key" "$target_dir/agents-broker-$toolset.log"; then
    echo "the key reached the broker's log" >&2
    exit 1
  fi
done
echo "every snippet of docs/clients.md ran under both toolsets; no key in the broker's log"
