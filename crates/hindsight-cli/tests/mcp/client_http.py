"""End-to-end test of `hindsight serve --http` with the official MCP Python SDK.

usage: client_http.py URL TOKEN_A TOKEN_B TOKEN_READONLY
  TOKEN_A: read/write on namespace "a"; TOKEN_B: read/write on "b";
  TOKEN_READONLY: read-only on "a" and "b".
"""

from __future__ import annotations

import asyncio
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import scenario

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def raw_auth_checks(url: str, token_a: str) -> None:
    base = url.rsplit("/mcp", 1)[0]
    async with httpx2.AsyncClient(timeout=30) as http:
        r = await http.post(url, json=INIT, headers=HEADERS)
        assert r.status_code == 401, f"no token: {r.status_code} {r.text}"
        assert r.headers.get("www-authenticate", "").lower().startswith("bearer"), r.headers
        r = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": "Bearer wrong-token"})
        assert r.status_code == 401, f"wrong token: {r.status_code} {r.text}"
        r = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Basic {token_a}"})
        assert r.status_code == 401, f"basic scheme: {r.status_code}"
        r = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {token_a}"})
        assert r.status_code == 200, f"good token: {r.status_code} {r.text}"
        health = (await http.get(f"{base}/healthz")).json()
        assert health["status"] == "ok" and health["backend"], health
    scenario.ok("HTTP auth: missing / wrong / non-bearer token -> 401; valid token -> 200; /healthz")


def client(token: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=120))


async def sdk_rejects_bad_token(url: str) -> None:
    try:
        async with streamable_http_client(url, http_client=client("wrong-token")) as (read, write):
            async with ClientSession(read, write) as session:
                await asyncio.wait_for(session.initialize(), 20)
    except BaseException as e:  # the SDK surfaces the 401 as an exception (group)
        scenario.ok(f"SDK with a wrong token fails to initialize ({type(e).__name__})")
        return
    raise AssertionError("the SDK initialized with a wrong token")


async def main(url: str, token_a: str, token_b: str, token_ro: str) -> None:
    await raw_auth_checks(url, token_a)
    await sdk_rejects_bad_token(url)

    async with streamable_http_client(url, http_client=client(token_a)) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            scenario.ok(f"initialize over HTTP: protocol {init.protocol_version}")
            ids = await scenario.run(session, namespace="a", max_content=3000)  # the server runs with --max-content-chars 3000
            # token A cannot read or write namespace b
            await scenario.expect_mcp_error(session, "memory_search", {"namespace": "b", "query": "anything"}, -32001, "\"b\"")
            await scenario.expect_mcp_error(session, "memory_store", {"namespace": "b", "content": "sneaky"}, -32001, "\"b\"")
            # default namespace of token A is "a"
            hits = (await scenario.call(session, "memory_search", {"query": "staging database password"}))["hits"]
            assert hits and hits[0]["id"] == ids["m1"], hits
            scenario.ok("token A: namespace b refused; default namespace is a")

    async with streamable_http_client(url, http_client=client(token_b)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            out = await scenario.call(session, "memory_search", {"query": "staging database password"})
            assert all(h["id"] not in ids.values() for h in out["hits"]), out
            await scenario.expect_mcp_error(session, "memory_search", {"namespace": "a", "query": "staging"}, -32001, "\"a\"")
            await scenario.expect_mcp_error(session, "memory_forget", {"namespace": "a", "id": ids["m1"], "reason": "x"}, -32001, "\"a\"")
            await scenario.call(session, "memory_store", {"content": "Namespace b has its own facts."})
            scenario.ok("token B: sees nothing of namespace a and cannot touch it")

    async with streamable_http_client(url, http_client=client(token_ro)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            out = await scenario.call(session, "memory_search", {"namespace": "a", "query": "staging database password"})
            assert out["hits"] and out["hits"][0]["id"] == ids["m1"], out
            await scenario.expect_mcp_error(session, "memory_store", {"namespace": "a", "content": "nope"}, -32001, "read-only")
            await scenario.expect_mcp_error(session, "working_memory_set", {"namespace": "b", "session_id": "s", "key": "k", "value": "v"}, -32001, "read-only")
            scenario.ok("read-only token: can search, cannot write")
    print("PASS http", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
