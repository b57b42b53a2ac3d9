#!/usr/bin/env bash
# The Kubernetes base played, not only linted (docs/deployment.md, "Kubernetes"):
# `podman kube play` runs deploy/kubernetes/base's Deployment (two replicas, its probes,
# security context, ConfigMap and Secrets) with the image deploy/image/check.sh built
# (built here when absent), each pod on podman's bridge with an address of its own. The
# store is the host's PostgreSQL (a database made for the run, reached through a
# forwarder on the bridge's gateway), the upstream a stub on that gateway. Checked:
# both replicas ready and answering; they share one store (an idempotent write sent to
# one is answered from the store by the other, the upstream written once; a tool limited
# to 10 calls a minute counts the calls of both); the pods run as 65532 on a read-only
# root. Then `kube down`: nothing of the run is left. Everything on this machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
. clients/lib.sh

bash deploy/image/podman-setup.sh >/dev/null
# The image of this checkout's binary, built every run (a tag left by an earlier run may
# hold another binary; unchanged layers come from podman's cache).
image=localhost/tool-broker:play
binary=${BINARY:-$target_dir/release/tool-broker}
[[ -x $binary ]] || cargo build --release -q -p tool-broker --bin tool-broker
BINARY=$binary TAG=$image bash deploy/image/build.sh >/dev/null

# The bridge the pods join. The network backend brings a bridge up with its first
# container and may take it down with its last (netavark does), so the run holds it up
# itself: a pod of just an infra container joins the network before the forwarder
# listens on its gateway and leaves in the cleanup. Nothing depends on an interface an
# earlier run left.
network=podman-default-kube-network
made_network=""
if ! podman network exists "$network"; then
  podman network create "$network" >/dev/null
  made_network=1
fi
bridge_pod=tool-broker-play-bridge

pg_url=${TOOL_BROKER_TEST_DATABASE_URL:-$(bash .ci/postgres.sh)}
if ! command -v psql >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-client >/dev/null
fi
pg_hostport=$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(p.hostname, p.port or 5432)' "$pg_url")
database=tool_broker_play_$$
work=$(mktemp -d)
forwarder="" stub=""
# The pods of a run, and the Secrets (podman secrets: what a secretKeyRef reads).
remove_played() {
  local name
  for name in tool-broker-pod-0 tool-broker-pod-1 "$bridge_pod"; do podman pod rm -f "$name" >/dev/null 2>&1 || true; done
  for name in tool-broker-database tool-broker-api-key; do podman secret rm "$name" >/dev/null 2>&1 || true; done
  podman volume rm -f tool-broker-config >/dev/null 2>&1 || true
}
remove_played # a run stopped before its cleanup
cleanup() {
  podman kube down "$work/play.yaml" >/dev/null 2>&1 || true
  remove_played
  # shellcheck disable=SC2086
  kill $forwarder $stub 2>/dev/null || true
  psql "$pg_url" -q -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 || true
  [[ -z $made_network ]] || podman network rm -f "$network" >/dev/null 2>&1 || true
  podman image rm -f "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
podman pod create --name "$bridge_pod" --network "$network" >/dev/null
podman pod start "$bridge_pod" >/dev/null
gateway=$(podman network inspect "$network" --format '{{range .Subnets}}{{.Gateway}}{{end}}')
[[ -n $gateway ]] || { echo "no gateway on $network" >&2; exit 1; }
bindable() { python3 -c 'import socket, sys; socket.socket().bind((sys.argv[1], 0))' "$1" 2>/dev/null; }
for _ in $(seq 1 50); do bindable "$gateway" && break; sleep 0.1; done
bindable "$gateway" || { echo "FAIL no interface holds $network's gateway $gateway with $bridge_pod up" >&2; exit 1; }
psql "$pg_url" -q -c "CREATE DATABASE $database" >/dev/null
forward_port=$(free_port)
stub_port=$(free_port)
# shellcheck disable=SC2086
python3 deploy/kubernetes/forward.py "$gateway" "$forward_port" $pg_hostport &
forwarder=$!
python3 clients/stub_upstream.py "$stub_port" "$gateway" &
stub=$!
fail() { echo "FAIL $*" >&2; for p in 0 1; do podman logs "tool-broker-pod-$p-tool-broker" 2>&1 | tail -5 >&2 || true; done; exit 1; }
ok() { echo "ok   $*"; }

key=tbk_play_$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')
pg_user=$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(p.username or "postgres")' "$pg_url")
pg_password=$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.quote(p.password or "", safe=""))' "$pg_url")
credentials=$pg_user${pg_password:+:$pg_password}
# What is played: the base's files as they are, but the image (the one built above), the
# config (the stub as every upstream) and the Secrets the base refers to by name.
python3 - "$work/play.yaml" "$image" "http://$gateway:$stub_port" \
  "postgres://$credentials@$gateway:$forward_port/$database" "$key" <<'PY'
import base64, json, pathlib, sys
out, image, stub, database, key = sys.argv[1:]
base = pathlib.Path("deploy/kubernetes/base")
deployment = (base / "deployment.yaml").read_text()
if "image: tool-broker:" not in deployment:
    sys.exit("deployment.yaml names no tool-broker image")
deployment = "\n".join(
    f"{line.split('image:')[0]}image: {image}" if line.strip().startswith("image: tool-broker:") else line
    for line in deployment.splitlines()
)
# podman publishes every containerPort on the host, where two replicas would take the
# same port: the pods are reached at their own addresses instead, the probes by number.
ports = "          ports:\n            - name: http\n              containerPort: 8080\n"
if ports not in deployment + "\n":
    sys.exit("deployment.yaml's ports are not the one `http` port 8080 this play expects")
deployment = (deployment + "\n").replace(ports, "").replace("port: http", "port: 8080")
config = f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: tool-broker-config
data:
  broker.toml: |
    [upstreams]
    payments = "{stub}"
    hosting = "{stub}"
"""
# The Secrets, as the podman secrets a secretKeyRef reads: a JSON object of each key's
# value in base64 (podman 4.3 keeps a Secret played from YAML as YAML, which it then
# cannot read).
for name, field, value in [("tool-broker-database", "url", database), ("tool-broker-api-key", "key", key)]:
    secret = {field: base64.b64encode(value.encode()).decode()}
    pathlib.Path(out).with_name(f"{name}.json").write_text(json.dumps(secret))
pathlib.Path(out).write_text("\n---\n".join(d.strip() + "\n" for d in [config, deployment]))
PY
for name in tool-broker-database tool-broker-api-key; do
  podman secret create "$name" "$work/$name.json" >/dev/null
done
podman kube play "$work/play.yaml" >/dev/null
pods=(tool-broker-pod-0 tool-broker-pod-1)
urls=()
for pod in "${pods[@]}"; do
  infra=$(podman pod inspect "$pod" --format '{{.InfraContainerID}}')
  ip=$(podman inspect "$infra" --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}')
  urls+=("http://$ip:8080")
done
for url in "${urls[@]}"; do
  for _ in $(seq 1 100); do curl -fs -o /dev/null "$url/readyz" && break; sleep 0.2; done
  curl -fsS "$url/readyz" | grep '"kind":"postgres"' >/dev/null || fail "$url is not ready on PostgreSQL"
done
ok "two replicas from the base's Deployment ready on one PostgreSQL (${urls[*]})"

call() { # url tool arguments [idempotency key]
  local extra=()
  [[ -n ${4:-} ]] && extra=(-H "idempotency-key: $4")
  curl -sS "$1/" -H "authorization: Bearer $key" -H "x-payments-api-key: pk_play" \
    -H "x-hosting-api-key: hk_play" -H "content-type: application/json" "${extra[@]}" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3}}"
}
classification() { python3 -c 'import json, sys; e = json.loads(sys.argv[1]); print((e.get("error") or {}).get("classification", "ok"))' "$1"; }
writes() { stub_writes "http://$gateway:$stub_port" "POST /v1/customers"; }

customer='{"name":"Play","confirm":true}'
first=$(call "${urls[0]}" payments.post_customers "$customer" play-1)
[[ $(classification "$first") == ok ]] || fail "the write on the first replica: ${first:0:300}"
second=$(call "${urls[1]}" payments.post_customers "$customer" play-1)
[[ $(classification "$second") == ok ]] || fail "the repeat on the second replica: ${second:0:300}"
[[ $(writes) == 1 ]] || fail "the upstream received $(writes) writes: the replicas do not share the idempotent result"
ok "an idempotent write repeated on the other replica answered from the shared store (one upstream write)"

availability='{"domain":"play-example","tlds":["com"]}'
limited=0
for i in $(seq 1 12); do
  answer=$(call "${urls[$((i % 2))]}" hosting.domains_check_domain_availability_v1 "$availability")
  case $(classification "$answer") in
    ok) ;;
    rate_limited) limited=$((limited + 1)) ;;
    *) fail "call $i: ${answer:0:300}" ;;
  esac
done
[[ $limited == 2 ]] || fail "$limited of 12 calls limited: the limit of 10 a minute is not counted across both replicas"
ok "a tool limited to 10 calls a minute: 12 calls alternating between the replicas, the last 2 limited"

for pod in "${pods[@]}"; do
  container=$pod-tool-broker
  pid=$(podman inspect "$container" --format '{{.State.Pid}}')
  uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
  [[ $uid == 65532 ]] || fail "$container runs as uid $uid"
  [[ $(podman inspect "$container" --format '{{.HostConfig.ReadonlyRootfs}}') == true ]] || fail "$container's root is writable"
  podman logs "$container" 2>&1 | grep -F "$key" >/dev/null && fail "the key is in $container's log"
done
ok "both pods run as 65532 on a read-only root filesystem; no key in their logs"

podman kube down "$work/play.yaml" >/dev/null 2>&1
left=$(podman pod ps --filter name=tool-broker-pod --format '{{.Name}}')
running=$(podman ps -a --filter name=tool-broker-pod --format '{{.Names}}')
[[ -z $left && -z $running ]] || fail "left after kube down: $left $running"
ok "kube down: no pod or container of the run left (its secrets and config volume removed next)"
