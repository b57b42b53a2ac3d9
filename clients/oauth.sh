#!/usr/bin/env bash
# The broker as an OAuth resource server with real parts (decision 011,
# docs/oauth.md): a certified OpenID provider (npm oidc-provider, clients/oauth/
# provider.mjs) on loopback, the broker with [oauth] naming it, and the official MCP
# TypeScript SDK client through the whole flow, login and consent in Debian's headless
# Chromium (clients/oauth/flow.mjs); then the hub (decision 012, docs/hub.md):
# two users, keys stored through the connect link after signing in at the provider,
# the stored key reaching the upstream, another user's link storing nothing
# (clients/oauth/hub.mjs); then the operator's console (docs/console.md) signed in as
# an admin, an auditor and a person without a role, every page checked by axe-core and
# written as a screenshot under <target>/console-screens (clients/oauth/console.mjs);
# then an account connected by OAuth (decision 020): a second oidc-provider as the
# hosting service's own authorization server (clients/oauth/service_provider.mjs),
# consent in Chromium, the token refreshed once near expiry and rotated, disconnect
# revoking there, and an on-behalf-of service with alice's own token exchanged at the
# provider (RFC 8693) (clients/oauth/connect.mjs).
# Versions pinned in clients/oauth/package.json. Installs
# chromium (Debian) and Node where absent. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=clients/oauth
. clients/lib.sh
need_browser_and_npm "$dir"

ensure_broker
stub_port=$(free_port)
idp_port=$(free_port)
svc_idp_port=$(free_port)
broker_port=$(free_port)
resource="http://127.0.0.1:$broker_port/mcp"
work=$(mktemp -d)
python3 clients/stub_upstream.py "$stub_port" &
stub_pid=$!
hub_secret="hub-client-secret-$RANDOM$RANDOM"
svc_secret="hosting-client-secret-$RANDOM$RANDOM"
obo_secret="obo-client-secret-$RANDOM$RANDOM"
hub_key="sk_hub_flow_canary_$RANDOM$RANDOM"
vault_key="vault-$(head -c 32 /dev/urandom | base64 | tr -d '/+=')"
approval_key="approval-$(head -c 32 /dev/urandom | base64 | tr -d '/+=')"
# An agent whose writes wait for a person: the console approves one.
agent_key="tb_console_agent_$RANDOM$RANDOM"
agent_sha=$(printf %s "$agent_key" | sha256sum | cut -d' ' -f1)
HUB_REDIRECT="http://127.0.0.1:$broker_port/hub/callback" HUB_SECRET="$hub_secret" OBO_SECRET="$obo_secret" \
  node "$dir/provider.mjs" "$idp_port" "$resource" >"$target_dir/oauth-provider.log" 2>&1 &
idp_pid=$!
# Access tokens of 30 s, refreshed 20 s before they expire: a call 11 s on refreshes.
CLIENT_SECRET="$svc_secret" REDIRECT="http://127.0.0.1:$broker_port/hub/oauth/hosting/callback" ACCESS_TTL=30 \
  node "$dir/service_provider.mjs" "$svc_idp_port" >"$target_dir/oauth-service-provider.log" 2>&1 &
svc_idp_pid=$!
trap 'kill $stub_pid $idp_pid $svc_idp_pid ${broker_pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT
wait_for "http://127.0.0.1:$idp_port/.well-known/openid-configuration"
wait_for "http://127.0.0.1:$svc_idp_port/.well-known/openid-configuration"
cat >"$work/config.toml" <<TOML
public_url = "http://127.0.0.1:$broker_port"
vault_key_env = "TOOL_BROKER_VAULT_KEY"
approval_key_env = "TOOL_BROKER_APPROVAL_KEY"
[oauth]
issuer = "http://127.0.0.1:$idp_port"
resource = "$resource"
[oauth.sign_in]
client_id = "tool-broker-hub"
client_secret_env = "TOOL_BROKER_HUB_CLIENT_SECRET"
scopes = ["openid", "profile"]
approver_role = "approver"
[admin]
roles = ["admin"]
auditor_roles = ["auditor"]
[[keys]]
name = "console-agent"
sha256 = "$agent_sha"
confirmation = "human"
[connect.hosting]
issuer = "http://127.0.0.1:$svc_idp_port"
scopes = ["openid", "offline_access", "email", "sites.read"]
client_id = "broker-hosting"
client_secret_env = "HOSTING_OAUTH_CLIENT_SECRET"
authorization_params = { prompt = "consent" }
refresh_skew_seconds = 20
[connect.imagegen]
issuer = "http://127.0.0.1:$idp_port"
token_exchange = true
audience = "https://imagegen.example"
scopes = ["images.read"]
client_id = "tool-broker-obo"
client_secret_env = "OBO_CLIENT_SECRET"
TOML
env TOOL_BROKER_UPSTREAM_PAYMENTS="http://127.0.0.1:$stub_port" \
  TOOL_BROKER_UPSTREAM_HOSTING="http://127.0.0.1:$stub_port" \
  TOOL_BROKER_UPSTREAM_IMAGEGEN="http://127.0.0.1:$stub_port" \
  HOSTING_OAUTH_CLIENT_SECRET="$svc_secret" \
  OBO_CLIENT_SECRET="$obo_secret" \
  TOOL_BROKER_VAULT_KEY="$vault_key" \
  TOOL_BROKER_APPROVAL_KEY="$approval_key" \
  TOOL_BROKER_HUB_CLIENT_SECRET="$hub_secret" \
  "$broker_bin" serve --listen "127.0.0.1:$broker_port" --config "$work/config.toml" \
  --data-dir "$work/data" >"$target_dir/oauth-broker.log" 2>&1 &
broker_pid=$!
url="http://127.0.0.1:$broker_port"
wait_ready "$url"

echo "oidc-provider $(node -p "require('./$dir/node_modules/oidc-provider/package.json').version"), @modelcontextprotocol/sdk $(node -p "require('./$dir/node_modules/@modelcontextprotocol/sdk/package.json').version"), chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}')"
BROKER_URL="$url" PAYMENTS_KEY="pk_oauth_flow_canary_5" node "$dir/flow.mjs"
BROKER_URL="$url" STUB_URL="http://127.0.0.1:$stub_port" HUB_KEY="$hub_key" node "$dir/hub.mjs"
echo "axe-core $(node -p "require('./$dir/node_modules/axe-core/package.json').version")"
BROKER_URL="$url" SCREENS="$target_dir/console-screens" AGENT_KEY="$agent_key" \
  SECRETS="$hub_key,$hub_secret,$vault_key,$approval_key,$agent_key" node "$dir/console.mjs"
BROKER_URL="$url" STUB_URL="http://127.0.0.1:$stub_port" \
  SERVICE_PROVIDER_URL="http://127.0.0.1:$svc_idp_port" IDP_URL="http://127.0.0.1:$idp_port" \
  node "$dir/connect.mjs"
# The access token never reaches the broker's log; the stored key and the client secret
# are in neither the log nor the data folder.
if grep -Eq 'eyJ[A-Za-z0-9_-]{10,}\.eyJ' "$target_dir/oauth-broker.log"; then
  echo "a JWT reached the broker's log" >&2
  exit 1
fi
for secret in "$hub_key" "$hub_secret" "$svc_secret" "$obo_secret"; do
  if grep -rqF "$secret" "$target_dir/oauth-broker.log" "$work/data"; then
    echo "a stored key or the hub's client secret is in the log or the data folder" >&2
    exit 1
  fi
done
echo "no stored key or client secret in the broker's log or its data folder"
