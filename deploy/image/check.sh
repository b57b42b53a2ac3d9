#!/usr/bin/env bash
# The image as an operator runs it (docs/deployment.md, "The container image"): built
# from the release binary (BINARY, default <target>/release/tool-broker, built when
# absent) with podman, then run on the host's network against a stub upstream on
# 127.0.0.1 and checked: at most 42 MB, ready, a call through it reaches the upstream,
# the process is not root and the image holds no shell, the data folder on a volume
# survives a new container (an idempotent write answers from the store), SIGTERM lets
# a call in flight finish and stops well within the grace period, and a catalog root
# and a config file mounted read-only are the ones served. Removes what it started.
set -euo pipefail
cd "$(dirname "$0")/../.."
. clients/lib.sh

bash deploy/image/podman-setup.sh >/dev/null
binary=${BINARY:-$target_dir/release/tool-broker}
if [[ ! -x $binary ]]; then
  cargo build --release -q -p tool-broker --bin tool-broker
fi
image=localhost/tool-broker:check
BINARY=$binary TAG=$image bash deploy/image/build.sh

stub_port=$(free_port)
port=$(free_port)
name=tool-broker-check-$$
volume=tool-broker-check-$$
key=tbk_image_check_$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')
stub=""
cleanup() {
  podman rm -f -t 0 "$name" >/dev/null 2>&1 || true
  podman volume rm -f "$volume" >/dev/null 2>&1 || true
  [[ -z $stub ]] || kill "$stub" 2>/dev/null || true
  # Earlier builds of the tag, untagged now (vfs keeps every layer whole).
  podman image prune -f >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup # what a run killed before its cleanup left under the same names
python3 clients/stub_upstream.py "$stub_port" &
stub=$!
podman volume create "$volume" >/dev/null

fail() { echo "FAIL $*" >&2; podman logs "$name" 2>&1 | tail -20 >&2; exit 1; }
# Pipes end in `grep ... >/dev/null`, never `grep -q`: under pipefail, `grep -q` stops
# at its first match and the writer dies of SIGPIPE, failing a check that held.
ok() { echo "ok   $*"; }

# The image's own settings: user, entrypoint, default command, labels.
config=$(podman image inspect "$image" --format '{{.Config.User}}|{{json .Config.Entrypoint}}|{{json .Config.Cmd}}|{{index .Config.Labels "org.opencontainers.image.licenses"}}|{{index .Config.Labels "org.opencontainers.image.revision"}}')
expected='65532:65532|["/usr/local/bin/tool-broker"]|["serve","--listen","0.0.0.0:8080","--data-dir","/data"]|Apache-2.0|'
[[ $config == "$expected"* && ${config##*|} != "" ]] || fail "the image's config: $config"
ok "the image runs tool-broker serve on 0.0.0.0:8080 as 65532, labelled"
# The size goal (docs/deployment.md, "Size"): at most 42 MB uncompressed.
size=$(podman image inspect "$image" --format '{{.Size}}')
((size <= 42000000)) || fail "the image is $size bytes, over the 42 MB goal"
ok "the image is $size bytes uncompressed (goal: at most 42 MB)"

start() {
  podman run -d --name "$name" --network host -v "$volume:/data" \
    -e TOOL_BROKER_API_KEY="$key" -e TOOL_BROKER_UPSTREAM_PAYMENTS="http://127.0.0.1:$stub_port" \
    "$image" serve --listen "127.0.0.1:$port" --data-dir /data >/dev/null
  wait_ready "http://127.0.0.1:$port" || fail "the container did not become ready"
}
call() { # idempotency key
  curl -sS "http://127.0.0.1:$port/" -H "authorization: Bearer $key" \
    -H "x-payments-api-key: pk_image_check" -H "idempotency-key: $1" -H "content-type: application/json" \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"payments.post_customers","arguments":{"name":"Image Check","confirm":true}}}'
}
writes() { stub_writes "http://127.0.0.1:$stub_port" "POST /v1/customers"; }
succeeded() { python3 -c 'import json, sys; e = json.loads(sys.argv[1]); sys.exit(0 if e.get("error") is None else 1)' "$1"; }

start
curl -fsS "http://127.0.0.1:$port/readyz" | grep '"status":"ready"' >/dev/null || fail "/readyz is not ready"
ok "/readyz ready"
answer=$(call first)
succeeded "$answer" || fail "the call through the container: ${answer:0:300}"
[[ $(writes) == 1 ]] || fail "the stub upstream did not receive the write"
ok "a write through the container reached the upstream on the host"
pid=$(podman inspect "$name" --format '{{.State.Pid}}')
uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
[[ $uid == 65532 ]] || fail "the broker runs as uid $uid"
ok "the broker runs as uid 65532"
if podman exec "$name" /bin/sh -c true >/dev/null 2>&1; then fail "the image has a shell"; fi
ok "no shell in the image"
podman logs "$name" 2>&1 | grep -F "$key" >/dev/null && fail "the key is in the log"

# A new container on the same volume: the store (and the start cache) survived.
podman stop -t 10 "$name" >/dev/null && podman rm "$name" >/dev/null
start
answer=$(call first)
succeeded "$answer" || fail "the repeated write: ${answer:0:300}"
[[ $(writes) == 1 ]] || fail "the repeated write reached the upstream again: the store did not survive"
podman logs "$name" 2>&1 | grep 'start_cache="read"' >/dev/null || fail "the start cache was not read from the volume"
ok "the data folder survived a new container: the repeated write answered from the store"

# SIGTERM with a call in flight: the call finishes, the broker exits 0 within the grace.
curl -fsS -X POST "http://127.0.0.1:$stub_port/__stub/delay" -d 2000 >/dev/null
work=$(mktemp -d)
call second > "$work/answer" &
caller=$!
sleep 0.5
t0=$(date +%s)
podman stop -t 30 "$name" >/dev/null
elapsed=$(($(date +%s) - t0))
wait "$caller" || fail "the call in flight failed"
succeeded "$(cat "$work/answer")" || fail "the call in flight: $(head -c 300 "$work/answer")"
code=$(podman inspect "$name" --format '{{.State.ExitCode}}')
[[ $code == 0 ]] || fail "the broker exited $code after SIGTERM"
((elapsed < 30)) || fail "SIGTERM took ${elapsed}s: the grace period ran out"
ok "SIGTERM: the call in flight finished, the broker exited 0 in ${elapsed}s (grace 30s)"
rm -rf "$work"

# A catalog root and a config file mounted read-only in place of the embedded ones.
podman rm "$name" >/dev/null
mounted=$(mktemp -d)
cp -r catalog rules templates "$mounted/"
token=tbk_mounted_$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')
printf '[[keys]]\nname = "mounted-config"\nsha256 = "%s"\n' "$(printf %s "$token" | sha256sum | cut -d' ' -f1)" >"$mounted/broker.toml"
chmod -R a+rX "$mounted"
podman run -d --name "$name" --network host -v "$mounted:/etc/tool-broker:ro" "$image" \
  serve --listen "127.0.0.1:$port" --data-dir /data \
  --catalog-dir /etc/tool-broker --config /etc/tool-broker/broker.toml >/dev/null
wait_ready "http://127.0.0.1:$port" || fail "the container with a mounted catalog did not become ready"
answer=$(curl -sS "http://127.0.0.1:$port/" -H "authorization: Bearer $token" \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"portal.check_connection"}}')
python3 -c 'import json, sys; e = json.loads(sys.argv[1]); sys.exit(0 if json.dumps(e["data"]).count("mounted-config") else 1)' "$answer" \
  || fail "the mounted config's key: ${answer:0:300}"
podman logs "$name" 2>&1 | grep -E 'catalog="?/etc/tool-broker[" ]' >/dev/null || fail "the mounted catalog was not the one compiled"
rm -rf "$mounted"
ok "a mounted --catalog-dir and --config (read-only) are the ones served"
