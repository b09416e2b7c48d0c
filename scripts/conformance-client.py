"""A real MCP client (the Python SDK, `mcp` on PyPI) for mcpflow's HTTP tests.

usage: python conformance-client.py MODE URL TOOL ARGS_JSON
MODE: `auto` (probe server/discover, fall back to initialize), `legacy` (initialize handshake,
2025-11-25 era), `2026-07-28` (stateless), or `sse` (legacy HTTP+SSE at URL, e.g. .../sse).
Lists the tools, calls TOOL with ARGS_JSON and prints one JSON line:
{"tools": [names], "result": CallToolResult}. Any failure exits non-zero with the error.
With MCP_BEARER_TOKEN set, every HTTP request carries `Authorization: Bearer` with it.
"""

import asyncio
import json
import os
import sys

from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main() -> None:
    mode, url, tool, args = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    token = os.environ.get("MCP_BEARER_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else None
    if mode == "sse":
        client = Client(sse_client(url, headers=headers), mode="legacy")
    elif headers:
        http = create_mcp_http_client(headers=headers)
        client = Client(streamable_http_client(url, http_client=http), mode=mode)
    else:
        client = Client(url, mode=mode)
    async with client:
        tools = await client.list_tools()
        result = await client.call_tool(tool, args)
        print(
            json.dumps(
                {
                    "tools": [t.name for t in tools.tools],
                    "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
                }
            )
        )


if __name__ == "__main__":
    asyncio.run(main())
