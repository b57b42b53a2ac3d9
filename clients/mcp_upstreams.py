"""Calls the reference MCP servers through a started broker (see clients/mcp_upstreams.sh).

`POST /` for most checks, and the official MCP Python SDK on `/mcp` for reads, content
blocks, the servers' progress and their questions. Exits non-zero on any failure; prints
one line per check.
"""

import asyncio
import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request

import httpx2
from mcp import types
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

URL = os.environ["BROKER_URL"]
TOKEN = os.environ["BROKER_TOKEN"]
failures = []


def check(label, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + label + ("" if condition else f": {detail}"))
    if not condition:
        failures.append(label)


def call(name, arguments):
    body = json.dumps({"jsonrpc": "2.0", "id": "c", "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()
    request = urllib.request.Request(URL + "/", data=body, method="POST", headers={
        "authorization": f"Bearer {TOKEN}", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def classification(body):
    return (body.get("error") or {}).get("classification")


def post_root():
    status, body = call("everything.echo", {"message": "hi"})
    check("stdio: echo answers its text", status == 200 and body["data"] == "Echo: hi", body)

    status, body = call("everything_http.echo", {"message": "over http"})
    check("Streamable HTTP (a session): echo answers", status == 200 and body["data"] == "Echo: over http", body)

    status, body = call("time.get_current_time", {"timezone": "UTC"})
    check("the Python time server answers structured data",
          status == 200 and isinstance(body["data"], dict) and "datetime" in json.dumps(body["data"]), body)

    status, body = call("everything.add_numbers", {"a": 2, "b": 3})
    check("a renamed tool (import/everything.toml) runs", status == 200 and "5" in json.dumps(body["data"]), body)
    status, body = call("everything.echo", {"message": "the secret plan"})
    check("a policy on an MCP tool's argument forbids it",
          status == 403 and classification(body) == "forbidden", body)

    status, body = call("everything.toggle_simulated_logging", {})
    check("a write without its confirmation sends nothing",
          status == 428 or (status == 200 and body["data"].get("dryRun") is True), (status, body))
    status, body = call("everything.toggle_simulated_logging", {"confirm": True})
    check("a confirmed write runs", status == 200 and body["ok"] is True, body)

    status, body = call("everything.get_env", {})
    shown = json.dumps(body.get("data"))
    check("a stdio server gets the environment [mcp] env names and nothing else",
          status == 200 and "never-passed-on" not in shown and TOKEN not in shown and "EVERYTHING_SHOWN" in shown,
          shown[:300])
    check("a value passed to the server is redacted in its answers", "shown-to-the-server" not in shown, shown[:300])

    status, body = call("everything.get_tiny_image", {})
    check("an image block is summarized, never its bytes",
          status == 200 and '"image/png"' in json.dumps(body["data"]) and len(json.dumps(body)) < 4000, json.dumps(body)[:300])

    status, body = call("everything.get_structured_content", {"location": "New York"})
    check("structuredContent is the data", status == 200 and isinstance(body["data"], dict), body)


def killed_mid_call():
    """The stdio server killed while a call waits: that call fails, a later one runs."""
    result = {}

    def slow():
        result["answer"] = call("everything.trigger_long_running_operation", {"duration": 6, "steps": 3})

    waiting = threading.Thread(target=slow)
    waiting.start()
    time.sleep(1.5)
    subprocess.run(["pkill", "-f", "server-everything/dist/index.js stdio"], check=False)
    waiting.join(30)
    status, body = result.get("answer", (0, {}))
    check("a server killed mid-call: upstream_unavailable",
          status == 502 and classification(body) == "upstream_unavailable", (status, body))
    for _ in range(60):
        status, body = call("everything.echo", {"message": "again"})
        if status == 200:
            break
        time.sleep(0.25)
    check("the server is started again for the next call", status == 200, body)


async def over_mcp():
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(URL + "/mcp", http_client=http)) as client:
            read = await client.call_tool("call_tool", {"name": "everything.echo", "arguments": {"message": "via mcp"}})
            envelope = read.structured_content
            check("/mcp: an MCP server's tool through call_tool", envelope["ok"] is True and envelope["data"] == "Echo: via mcp", envelope)
            image = await client.call_tool("call_tool", {"name": "everything.get_tiny_image", "arguments": {}})
            kinds = [c.type for c in image.content]
            check("/mcp: the server's image block comes whole", "image" in kinds, kinds)
            found = await client.call_tool("find_tools", {"query": "current time timezone"})
            names = [r["fullName"] for r in found.structured_content["data"]["results"]]
            check("find_tools finds an MCP server's tool", "time.get_current_time" in names, names)


async def relayed():
    """A server's progress and its questions reach the SDK's callbacks through the broker."""
    headers = {"authorization": f"Bearer {TOKEN}"}
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True})

    for service in ("everything", "everything_http"):
        for mode in ("legacy", "auto"):
            seen = []

            async def progress(value, total, message):
                seen.append((value, total))

            async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
                transport = streamable_http_client(URL + "/mcp", http_client=http)
                async with Client(transport, mode=mode, elicitation_callback=answer) as client:
                    era = "2025-11-25" if mode == "legacy" else "2026-07-28"
                    done = await client.call_tool(f"{service}.trigger_long_running_operation",
                                                  {"duration": 1, "steps": 3}, progress_callback=progress)
                    check(f"{service} ({era}): the server's progress reaches the caller",
                          [v for v, _ in seen] == [1, 2, 3] and not done.is_error, (seen, done.structured_content))
                    result = await client.call_tool(f"{service}.trigger_elicitation_request", {})
                    text = json.dumps(result.structured_content)
                    check(f"{service} ({era}): the server's question is put to the caller and answered",
                          "Ada Lovelace" in text and asked, text[:300])


post_root()
asyncio.run(over_mcp())
asyncio.run(relayed())
killed_mid_call()
if failures:
    raise SystemExit(f"{len(failures)} check(s) failed: {failures}")
print("ok: every MCP upstream check passed")
