"""The policy reload check (docs/policy.md), against the built binary: a running broker
reads its policy folder again on SIGHUP. A valid set decides the next call on the same
keep-alive connection (nothing dropped); an invalid one is rejected, counted and logged,
and the last valid set still decides. Standard library only; loopback only.

Usage: policy_reload.py BROKER_BINARY STUB_UPSTREAM_SCRIPT
"""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TOKEN = "tb_policy_reload_check_0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(what, check, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    sys.exit(f"policy reload check: {what} did not happen within {seconds} s")


def main():
    binary, stub = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix="policy-reload-")
    policies = os.path.join(work, "policies")
    os.mkdir(policies)
    policy = os.path.join(policies, "p.cedar")

    def write(text):
        # Written whole, then renamed: a reload never reads half a file.
        with open(policy + ".tmp", "w") as f:
            f.write(text)
        os.replace(policy + ".tmp", policy)

    write('@id("reads")\npermit(principal, action in Action::"read", resource);\n')
    config = os.path.join(work, "config.toml")
    with open(config, "w") as f:
        f.write(f'[policy]\ndir = "{policies}"\n')
    stub_port, port = free_port(), free_port()
    env = dict(os.environ, TOOL_BROKER_API_KEY=TOKEN,
               TOOL_BROKER_UPSTREAM_PAYMENTS=f"http://127.0.0.1:{stub_port}")
    log = open(os.path.join(work, "broker.log"), "w")
    stub_proc = subprocess.Popen([sys.executable, stub, str(stub_port)])
    broker = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--config", config,
         "--data-dir", os.path.join(work, "data")],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

        def request(method, path, body=None):
            headers = {"authorization": f"Bearer {TOKEN}",
                       "content-type": "application/json",
                       "x-payments-api-key": "pk_policy_reload_1"}
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read().decode()

        def ready():
            try:
                return request("GET", "/readyz")[0] == 200
            except OSError:
                conn.close()
                return False

        wait("the broker answering /readyz", ready)

        def call():
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "payments.get_customers", "arguments": {}}})
            status, text = request("POST", "/", body)
            return status, json.loads(text)

        def reloads(outcome):
            text = request("GET", "/metrics")[1]
            line = f'tool_broker_policy_reloads_total{{outcome="{outcome}"}} '
            return next((int(l[len(line):]) for l in text.splitlines() if l.startswith(line)), 0)

        status, body = call()
        assert status == 200, (status, body)
        sock = conn.sock

        # A valid change: the next calls are refused by it, on the same connection.
        write('@id("frozen")\nforbid(principal, action, resource);\n'
              'permit(principal, action in Action::"read", resource);\n')
        broker.send_signal(signal.SIGHUP)
        wait("the accepted reload", lambda: reloads("accepted") == 1)
        status, body = call()
        assert status == 403, (status, body)
        assert body["error"]["details"] == {"reason": "policy", "policies": ["frozen"]}, body
        assert conn.sock is sock, "the keep-alive connection was dropped by the reload"

        # An invalid set: rejected, counted, logged; the last valid set still decides.
        write('forbid(principal, action, resource) when { context.nope };\n')
        broker.send_signal(signal.SIGHUP)
        wait("the rejected reload", lambda: reloads("rejected") == 1)
        status, body = call()
        assert status == 403 and body["error"]["details"]["policies"] == ["frozen"], body
        assert reloads("accepted") == 1
        assert conn.sock is sock, "the keep-alive connection was dropped by the reload"

        def logged():
            with open(log.name) as f:
                text = f.read()
            return text if "policy reload rejected" in text else None

        text = wait("the rejected set's errors in the log", logged)
        assert "p.cedar:1:44" in text and "`nope`" in text, "the log does not say where"
        assert TOKEN not in text, "the log holds the API key"
        print("policy reload: a valid set decides the next call, an invalid one is rejected "
              "and the last valid set still decides; one connection throughout")
    finally:
        broker.send_signal(signal.SIGTERM)
        try:
            broker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            broker.kill()
        stub_proc.kill()
        log.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
