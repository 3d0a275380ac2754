"""End-to-end test of `hindsight serve --stdio` with the official MCP Python SDK.

usage: client_stdio.py HINDSIGHT_BIN DATA_DIR EMBEDDER
"""

from __future__ import annotations

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client

import scenario


async def main(bin_path: str, data: str, embedder: str) -> None:
    params = StdioServerParameters(
        command=bin_path,
        args=["--data", data, "--embedder", embedder, "serve", "--stdio", "--namespace", "default,team"],
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "hindsight", init.server_info
            scenario.ok(f"initialize: protocol {init.protocol_version}")
            await scenario.run(session)
            # a second granted namespace is isolated from the default one
            other = await scenario.call(session, "memory_search", {"namespace": "team", "query": "staging password"})
            assert other["count"] == 0, other
            await scenario.call(session, "memory_store", {"namespace": "team", "content": "Team standup is at 10:00."})
            # a namespace not granted on the command line is refused
            await scenario.expect_mcp_error(session, "memory_search", {"namespace": "elsewhere", "query": "x"}, -32001, "elsewhere")
            scenario.ok("stdio namespaces: isolated, ungranted one refused")
    print("PASS stdio", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
