"""A proxied MCP call against the same call made to the server directly (bench/mcp_proxy.sh).

Sequential calls of server-everything's `echo` on one keep-alive connection each way:
directly (a 2025-11-25 session of its own), through the broker's `POST /`, and through the
broker's `/mcp`. Prints latency percentiles and the CPU each process spent per call
(from /proc), as a markdown table.
"""

import http.client
import json
import os
import sys
import time

BROKER = os.environ["BROKER_ADDR"]          # host:port
SERVER = os.environ["SERVER_ADDR"]          # host:port of server-everything
TOKEN = os.environ["BROKER_TOKEN"]
PIDS = {"broker": int(os.environ["BROKER_PID"]), "server": int(os.environ["SERVER_PID"])}
CALLS = int(os.environ.get("CALLS", "2000"))
TICK = os.sysconf("SC_CLK_TCK")


def cpu(pid):
    """User + system CPU seconds of a process and its threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def read_answer(response):
    body = response.read().decode()
    if response.getheader("content-type", "").startswith("text/event-stream"):
        for line in body.splitlines():
            if line.startswith("data:") and line[5:].strip():
                return json.loads(line[5:])
        raise SystemExit("no message in the event stream")
    return json.loads(body)


def direct():
    conn = http.client.HTTPConnection(SERVER)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
    conn.request("POST", "/mcp", json.dumps(init), headers)
    response = conn.getresponse()
    session = response.getheader("mcp-session-id")
    read_answer(response)
    headers = dict(headers, **{"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), headers)
    conn.getresponse().read()

    def one(i):
        body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "hi"}}}
        conn.request("POST", "/mcp", json.dumps(body), headers)
        answer = read_answer(conn.getresponse())
        assert answer["result"]["content"][0]["text"] == "Echo: hi", answer
    return one


def broker_root():
    conn = http.client.HTTPConnection(BROKER)
    headers = {"content-type": "application/json", "authorization": f"Bearer {TOKEN}"}

    def one(i):
        body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "everything_http.echo", "arguments": {"message": "hi"}}}
        conn.request("POST", "/", json.dumps(body), headers)
        answer = json.loads(conn.getresponse().read())
        assert answer["data"] == "Echo: hi", answer
    return one


def broker_mcp():
    conn = http.client.HTTPConnection(BROKER)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "authorization": f"Bearer {TOKEN}", "mcp-protocol-version": "2025-11-25"}

    def one(i):
        body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "everything_http.echo", "arguments": {"message": "hi"}}}
        conn.request("POST", "/mcp", json.dumps(body), headers)
        answer = json.loads(conn.getresponse().read())
        assert answer["result"]["structuredContent"]["data"] == "Echo: hi", answer
    return one


def measure(label, one):
    for i in range(200):
        one(i)
    before = {k: cpu(p) for k, p in PIDS.items()}
    took = []
    for i in range(CALLS):
        start = time.perf_counter()
        one(i)
        took.append(time.perf_counter() - start)
    after = {k: cpu(p) for k, p in PIDS.items()}
    took.sort()
    pct = lambda q: took[min(len(took) - 1, int(q * len(took)))] * 1000
    per_call = {k: (after[k] - before[k]) / CALLS * 1e6 for k in PIDS}
    print(f"| {label} | {pct(0.5):.2f} | {pct(0.99):.2f} | {per_call['broker']:.0f} | {per_call['server']:.0f} |")


print(f"{CALLS} sequential calls of `echo` each way, after 200 to warm up.\n")
print("| path | p50 ms | p99 ms | broker CPU per call (µs) | server CPU per call (µs) |")
print("|---|---|---|---|---|")
measure("the server directly (its own session)", direct())
measure("through the broker, `POST /`", broker_root())
measure("through the broker, `/mcp`", broker_mcp())
