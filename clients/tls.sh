#!/usr/bin/env bash
# HTTPS served by the built broker (`[tls]`, docs/deployment.md "TLS"), sent SIGHUP: a
# keep-alive connection opened under the first pair keeps answering after the reload,
# new connections are handed the second pair (a client trusting only the first CA is
# refused), and a bad pair sent with another SIGHUP changes nothing. Python's standard
# library; the test certificates of tests/fixtures/tls; loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
. clients/lib.sh
ensure_broker
work=$(mktemp -d)
fixtures=tests/fixtures/tls
cp "$fixtures/server-a.crt" "$work/tls.crt"
cp "$fixtures/server-a.key" "$work/tls.key"
port=$(free_port)
cat >"$work/config.toml" <<TOML
[tls]
cert_file = "$work/tls.crt"
key_file = "$work/tls.key"
TOML
key="tbk_tls_check_$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
TOOL_BROKER_API_KEY="$key" "$broker_bin" serve --listen "127.0.0.1:$port" --config "$work/config.toml" \
  --data-dir "$work/data" >"$target_dir/tls-broker.log" 2>&1 &
broker_pid=$!
trap 'kill $broker_pid 2>/dev/null || true; rm -rf "$work"' EXIT
WORK="$work" FIXTURES="$fixtures" PORT="$port" KEY="$key" BROKER_PID="$broker_pid" python3 - <<'PY'
import http.client, json, os, signal, ssl, time

port, key, work, fixtures = int(os.environ["PORT"]), os.environ["KEY"], os.environ["WORK"], os.environ["FIXTURES"]
pid = int(os.environ["BROKER_PID"])
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "portal.check_connection"}})

def connection(ca):
    context = ssl.create_default_context(cafile=f"{fixtures}/ca-{ca}.crt")
    return http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)

def call(conn):
    conn.request("POST", "/", body, {"authorization": f"Bearer {key}", "content-type": "application/json"})
    answer = conn.getresponse()
    envelope = json.loads(answer.read())
    assert answer.status == 200 and envelope["data"]["authenticated"] is True, envelope
    return conn.sock.getpeercert()["issuer"]

def refused(ca):
    try:
        call(connection(ca))
    except ssl.SSLCertVerificationError:
        return True
    return False

deadline = time.time() + 30
while True:
    try:
        kept = connection("a")
        issuer = call(kept)
        break
    except (ConnectionRefusedError, ssl.SSLError, OSError):
        if time.time() > deadline:
            raise
        time.sleep(0.1)
print(f"ok   HTTPS on HTTP/1.1 with pair a ({dict(x[0] for x in issuer)['commonName']})")

def swap(cert, key_file):
    for src, dst in ((cert, "tls.crt"), (key_file, "tls.key")):
        with open(f"{fixtures}/{src}", "rb") as f, open(f"{work}/{dst}", "wb") as out:
            out.write(f.read())
    os.kill(pid, signal.SIGHUP)

swap("server-b.crt", "server-b.key")
deadline = time.time() + 10
while not refused("a"):
    assert time.time() < deadline, "SIGHUP: new connections still get pair a"
    time.sleep(0.1)
call(connection("b"))
print("ok   SIGHUP: new connections get pair b; a client trusting only CA a is refused")
call(kept)
print("ok   the connection opened before the reload still answers on the same socket")
swap("server-b.crt", "server-a.key")
time.sleep(0.5)
call(connection("b"))
assert refused("a")
call(kept)
print("ok   a bad pair (b's certificate, a's key) sent with SIGHUP changes nothing")
PY
grep -q "TLS reload rejected" "$target_dir/tls-broker.log" || { echo "the rejected reload was not logged" >&2; exit 1; }
if grep -qF "$key" "$target_dir/tls-broker.log" || grep -q "PRIVATE KEY" "$target_dir/tls-broker.log"; then
  echo "a key reached the broker's log" >&2
  exit 1
fi
echo "ok   the rejected reload logged; no key in the log"
