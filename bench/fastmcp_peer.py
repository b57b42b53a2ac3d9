"""The peer in the published comparison: FastMCP's OpenAPI-to-MCP server proxying the
same upstream operation the broker calls (hosting's billing catalog list).

    python bench/fastmcp_peer.py UPSTREAM_PORT LISTEN_PORT

Stateless streamable HTTP with JSON answers, so a `tools/call` needs no session, as
with the broker's `POST /mcp`. Loopback only.
"""

import sys

import httpx2 as httpx
from fastmcp import FastMCP

upstream_port, listen_port = int(sys.argv[1]), int(sys.argv[2])
base = f"http://127.0.0.1:{upstream_port}"
spec = {
    "openapi": "3.0.3",
    "info": {"title": "hosting billing (bench)", "version": "1"},
    "servers": [{"url": base}],
    "paths": {
        "/api/billing/v1/catalog": {
            "get": {
                "operationId": "billing_getCatalogItemListV1",
                "summary": "Lists catalog items available for order.",
                "parameters": [
                    {"name": "category", "in": "query", "schema": {"type": "string", "enum": ["DOMAIN", "VPS", "EMAIL"]}},
                    {"name": "name", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {
                        "description": "catalog items",
                        "content": {"application/json": {"schema": {"type": "array", "items": {"type": "object"}}}},
                    }
                },
            }
        }
    },
}
client = httpx.AsyncClient(base_url=base, headers={"authorization": "Bearer bench"})
mcp = FastMCP.from_openapi(openapi_spec=spec, client=client, name="peer")
mcp.run(
    transport="http",
    host="127.0.0.1",
    port=listen_port,
    json_response=True,
    stateless_http=True,
    show_banner=False,
    log_level="warning",
)
