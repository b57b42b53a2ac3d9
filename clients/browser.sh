#!/usr/bin/env bash
# The approval page (confirmation = "human") in a real browser: Debian's headless
# Chromium driven by playwright-core (pinned in clients/browser/package.json), against a
# broker started here on 127.0.0.1 with a loopback stub upstream. Approve, decline, an
# expired approval, a decision posted without its CSRF token (clients/browser/approval.mjs).
# Installs chromium (Debian) and Node where absent.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=clients/browser
. clients/lib.sh
need_browser_and_npm "$dir"

ensure_broker
stub_port=$(free_port)
broker_port=$(free_port)
token=tb_browser_check_token_0123456789
credential=approver_browser_check_credential_42
ttl=8
python3 clients/stub_upstream.py "$stub_port" &
stub_pid=$!
work=$(mktemp -d)
cat >"$work/config.toml" <<TOML
confirmation = "human"
approval_key_env = "TOOL_BROKER_APPROVAL_KEY"
approval_ttl_seconds = $ttl
approval_wait_seconds = 1   # the CSRF case reads the approval as still pending
[[approvers]]
name = "browser-check"
sha256 = "$(printf %s "$credential" | sha256sum | cut -d' ' -f1)"
TOML
env TOOL_BROKER_API_KEY="$token" \
  TOOL_BROKER_APPROVAL_KEY="approval-key-of-the-browser-check-0123456789" \
  TOOL_BROKER_UPSTREAM_PAYMENTS="http://127.0.0.1:$stub_port" \
  "$broker_bin" serve --listen "127.0.0.1:$broker_port" --config "$work/config.toml" \
  --data-dir "$work/data" >"$target_dir/browser-broker.log" 2>&1 &
broker_pid=$!
trap 'kill $stub_pid $broker_pid 2>/dev/null || true; rm -rf "$work"' EXIT
url="http://127.0.0.1:$broker_port"
wait_ready "$url"

echo "chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}'), playwright-core $(node -p "require('./$dir/node_modules/playwright-core/package.json').version")"
BROKER_URL="$url" BROKER_TOKEN="$token" APPROVER_CREDENTIAL="$credential" APPROVAL_TTL_SECONDS="$ttl" \
  node "$dir/approval.mjs"
