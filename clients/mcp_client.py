"""Runs the official MCP Python SDK against a started broker (see clients/run.sh).

For each connect mode -- the initialize handshake ("legacy") and the SDK's default
("auto": server/discover first, falling back to initialize) -- it lists tools through
every page, calls a local tool and a proxied tool (against the local stub upstream),
and checks that structuredContent is the broker's envelope. Exits non-zero on any
failure; prints one line per check.
"""

import asyncio
import json
import os
import sys

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

URL = os.environ["BROKER_URL"] + "/mcp"
# A key with the deployment's default toolset (the discovery tools) and one whose
# config entry says `toolset = "all"`.
TOKEN = os.environ["BROKER_TOKEN"]
TOKEN_ALL = os.environ["BROKER_TOKEN_ALL"]


def headers(token):
    return {
        "authorization": f"Bearer {token}",
        # The caller's own upstream key for the proxied call (BYOK).
        "x-agent-api-key": "ak_client_test_key",
    }

failures = []


def check(label, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + label + ("" if condition else f": {detail}"))
    if not condition:
        failures.append(label)


async def default_surface(mode):
    """The default key: three discovery tools, and through them any tool."""
    async with httpx2.AsyncClient(headers=headers(TOKEN), timeout=60) as http:
        async with Client(streamable_http_client(URL, http_client=http), mode=mode) as client:
            result = await client.list_tools(cache_mode="bypass")
            names = [t.name for t in result.tools]
            check(f"[{mode}] the default surface is the discovery tools", names == ["find_tools", "get_tool_reference", "call_tool"] and not result.next_cursor, names)
            found = await client.call_tool("find_tools", {"query": "list tasks", "service": "agent"})
            hit = found.structured_content["data"]["results"][0]
            check(f"[{mode}] find_tools leads to the tool", hit["fullName"] == "agent.list_tasks" and "required" in hit, hit)
            called = await client.call_tool("call_tool", {"name": hit["fullName"], "arguments": {"limit": 2}})
            envelope = called.structured_content
            check(f"[{mode}] call_tool runs it", envelope["ok"] is True and envelope["data"] == [{"id": "task_stub"}], envelope)


async def run(mode):
    async with httpx2.AsyncClient(headers=headers(TOKEN_ALL), timeout=60) as http:
        async with Client(streamable_http_client(URL, http_client=http), mode=mode) as client:
            version = client.session.protocol_version
            check(f"[{mode}] connected, protocol {version}", bool(version))
            tools = []
            cursor = None
            pages = 0
            while True:
                result = await client.list_tools(cursor=cursor, cache_mode="bypass")
                tools.extend(result.tools)
                pages += 1
                cursor = result.next_cursor
                if not cursor:
                    break
                if pages > 100:
                    break
            names = [t.name for t in tools]
            check(f"[{mode}] listed {len(tools)} tools in {pages} pages", len(tools) > 1000 and pages > 1)
            check(f"[{mode}] no tool listed twice", len(set(names)) == len(names))
            check(f"[{mode}] every input schema is an object", all(t.input_schema.get("type") == "object" for t in tools))

            local = await client.call_tool("payments.find_tools", {"query": "list issuing cards"})
            envelope = local.structured_content
            check(f"[{mode}] local tool answered ok", envelope and envelope.get("ok") is True, envelope)
            check(
                f"[{mode}] local tool found the right tool",
                envelope["data"]["results"][0]["fullName"] == "payments.get_issuing_cards",
                envelope["data"]["results"][:2],
            )
            check(f"[{mode}] text content is the envelope", json.loads(local.content[0].text) == envelope)

            proxied = await client.call_tool("agent.list_tasks", {"limit": 2})
            envelope = proxied.structured_content
            check(f"[{mode}] proxied tool answered ok", envelope and envelope.get("ok") is True, envelope)
            check(f"[{mode}] proxied answer came from the stub", envelope["data"] == [{"id": "task_stub"}], envelope)
            check(f"[{mode}] isError is false", proxied.is_error is False)

            failing = await client.call_tool("agent.get_task_detail", {})
            check(f"[{mode}] a refused call is isError with the envelope", failing.is_error is True
                  and failing.structured_content["error"]["classification"] == "validation_error",
                  failing.structured_content)


async def main():
    for mode in ("legacy", "auto"):
        for part in (default_surface, run):
            try:
                await part(mode)
            except Exception as e:  # noqa: BLE001 - report and go on to the next part
                check(f"[{mode}] {part.__name__}", False, repr(e))
    if failures:
        print(f"mcp client: {len(failures)} checks failed")
        sys.exit(1)
    print("mcp client: all checks passed")


asyncio.run(main())
