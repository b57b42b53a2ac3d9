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
from mcp import types
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

URL = os.environ["BROKER_URL"] + "/mcp"
# A key with the deployment's default toolset (the discovery tools) and one whose
# config entry says `toolset = "all"`.
TOKEN = os.environ["BROKER_TOKEN"]
TOKEN_ALL = os.environ["BROKER_TOKEN_ALL"]
# A key whose writes a person approves (`confirmation = "human"`), and the stub upstream.
TOKEN_HUMAN = os.environ["BROKER_TOKEN_HUMAN"]
STUB_URL = os.environ["STUB_URL"]


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


async def stub_writes(http):
    """How many POST /v1/customers the stub upstream received."""
    answer = await http.get(f"{STUB_URL}/__stub/writes")
    return answer.json().get("POST /v1/customers", 0)


def human_headers():
    return {"authorization": f"Bearer {TOKEN_HUMAN}", "x-payments-api-key": "pk_client_test_key"}


CUSTOMER = {"name": "Elicited-Customer", "confirm": True}


async def elicitation(mode):
    """A write under `human`: the SDK shows the broker's form through its elicitation
    callback and retries with the answer (2026-07-28 multi-round trip)."""
    if mode != "auto":
        return  # the handshake revisions have no input-required results: the approval page applies
    shown = []

    def answering(action, approve=None):
        async def callback(context, params):
            shown.append(params)
            content = None if approve is None else {"approve": approve}
            return types.ElicitResult(action=action, content=content)
        return callback

    async with httpx2.AsyncClient(headers=human_headers(), timeout=60) as http:
        before = await stub_writes(http)
        async with Client(streamable_http_client(URL, http_client=http), mode=mode,
                          elicitation_callback=answering("accept", True)) as client:
            check(f"[{mode}] elicitation: connected on 2026-07-28", client.session.protocol_version == "2026-07-28",
                  client.session.protocol_version)
            result = await client.call_tool("payments.post_customers", CUSTOMER)
            check(f"[{mode}] elicitation: the form showed the request",
                  len(shown) == 1 and "POST" in shown[0].message and "/v1/customers" in shown[0].message
                  and "Elicited-Customer" in shown[0].message, shown)
            check(f"[{mode}] elicitation: accepted, the write ran", result.is_error is False, result.structured_content)
            check(f"[{mode}] elicitation: one upstream POST", await stub_writes(http) == before + 1)

        async with Client(streamable_http_client(URL, http_client=http), mode=mode,
                          elicitation_callback=answering("decline")) as client:
            result = await client.call_tool("payments.post_customers", CUSTOMER)
            check(f"[{mode}] elicitation: declined is confirmation_declined",
                  result.is_error is True
                  and result.structured_content["error"]["classification"] == "confirmation_declined",
                  result.structured_content)
            check(f"[{mode}] elicitation: nothing sent on a decline", await stub_writes(http) == before + 1)

            # Driving the rounds by hand: a requestState altered by the client is refused.
            first = await client.session.call_tool("payments.post_customers", CUSTOMER, allow_input_required=True)
            check(f"[{mode}] elicitation: the first round is input_required",
                  isinstance(first, types.InputRequiredResult) and "approval" in (first.input_requests or {}), first)
            state = first.request_state
            altered = state[:-3] + ("AAA" if not state.endswith("AAA") else "BBB")
            accepted = {"approval": types.ElicitResult(action="accept", content={"approve": True})}
            try:
                await client.session.call_tool("payments.post_customers", CUSTOMER,
                                               input_responses=accepted, request_state=altered,
                                               allow_input_required=True)
                check(f"[{mode}] elicitation: an altered requestState is refused", False, "no error")
            except MCPError as e:
                check(f"[{mode}] elicitation: an altered requestState is refused",
                      e.error.code == -32602 and (e.error.data or {}).get("reason") == "invalid", e.error)
            check(f"[{mode}] elicitation: nothing sent for the altered state", await stub_writes(http) == before + 1)


async def main():
    for mode in ("legacy", "auto"):
        for part in (default_surface, run, elicitation):
            try:
                await part(mode)
            except Exception as e:  # noqa: BLE001 - report and go on to the next part
                check(f"[{mode}] {part.__name__}", False, repr(e))
    if failures:
        print(f"mcp client: {len(failures)} checks failed")
        sys.exit(1)
    print("mcp client: all checks passed")


asyncio.run(main())
