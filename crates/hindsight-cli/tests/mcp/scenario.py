"""Shared end-to-end scenario for hindsight's MCP server, driven by the official MCP Python SDK.

Used by client_stdio.py and client_http.py. Every check raises AssertionError with a message;
progress goes to stdout as "ok: <step>" lines.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp import ClientSession, MCPError

EXPECTED_TOOLS = {
    "memory_store",
    "memory_search",
    "memory_update",
    "memory_forget",
    "memory_feedback",
    "memory_summarize",
    "reflect_and_store",
    "working_memory_set",
    "working_memory_get",
    "working_memory_clear",
}


def ok(step: str) -> None:
    print(f"ok: {step}", flush=True)


async def call(session: ClientSession, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Calls a tool that must succeed; returns its structured content."""
    res = await session.call_tool(name, args)
    text = " ".join(getattr(c, "text", "") for c in res.content)
    assert not res.is_error, f"{name} failed: {text}"
    assert isinstance(res.structured_content, dict), f"{name}: no structured content: {text}"
    return res.structured_content


async def expect_mcp_error(session: ClientSession, name: str, args: dict[str, Any], code: int, needle: str) -> None:
    """The call must fail with a JSON-RPC error of `code` whose message contains `needle`."""
    try:
        res = await session.call_tool(name, args)
    except MCPError as e:
        assert e.code == code, f"{name}: expected code {code}, got {e.code}: {e.error.message}"
        assert needle in e.error.message, f"{name}: {needle!r} not in {e.error.message!r}"
        return
    text = " ".join(getattr(c, "text", "") for c in res.content)
    raise AssertionError(f"{name}{args}: expected MCP error {code}, got result is_error={res.is_error}: {text}")


async def expect_tool_error(session: ClientSession, name: str, args: dict[str, Any], needle: str) -> None:
    """Argument errors: rmcp reports them as a tool result with is_error=true (or a JSON-RPC
    invalid-params error); either way the message must name the problem."""
    try:
        res = await session.call_tool(name, args)
    except MCPError as e:
        assert e.code == -32602, f"{name}: expected -32602, got {e.code}: {e.error.message}"
        assert needle in e.error.message, f"{name}: {needle!r} not in {e.error.message!r}"
        return
    text = " ".join(getattr(c, "text", "") for c in res.content)
    assert res.is_error, f"{name}{args}: expected an error, got {text}"
    assert needle in text, f"{name}: {needle!r} not in {text!r}"


async def still_alive(session: ClientSession) -> None:
    out = await call(session, "memory_search", {"query": "staging password"})
    assert out["count"] >= 0


async def run(session: ClientSession, namespace: str | None = None, max_content: int = 8000) -> dict[str, str]:
    """The full tool walk-through. `namespace` is passed explicitly when given. Returns ids."""
    ns: dict[str, Any] = {} if namespace is None else {"namespace": namespace}

    tools = (await session.list_tools()).tools
    names = {t.name for t in tools}
    assert names == EXPECTED_TOOLS, f"tools: {sorted(names)}"
    for t in tools:
        assert t.description and len(t.description) > 40, f"{t.name}: description too short"
        assert t.input_schema.get("type") == "object", f"{t.name}: input schema {t.input_schema}"
        assert t.output_schema is not None, f"{t.name}: no output schema"
    store_schema = next(t for t in tools if t.name == "memory_store").input_schema
    assert store_schema.get("required") == ["content"], store_schema
    ok("list_tools: 10 tools with schemas")

    m1 = await call(session, "memory_store", {**ns,
        "content": "The staging database password rotates every Monday at 09:00 UTC.",
        "tags": ["ops"], "entities": {"env": "staging"}, "importance": 0.6})
    m2 = await call(session, "memory_store", {**ns,
        "content": "Customer with order ORD-58213 prefers email over phone calls.",
        "kind": "semantic", "entities": {"order_id": "ORD-58213"}, "source": "user"})
    assert m1["id"] != m2["id"] and not m1["deduplicated"] and m1["status"] == "active", (m1, m2)
    dup = await call(session, "memory_store", {**ns,
        "content": "The staging database password rotates every Monday at 09:00 UTC."})
    assert dup["deduplicated"] and dup["id"] == m1["id"], dup
    ok(f"memory_store: {m1['id']}, {m2['id']}; exact duplicate deduplicated")

    hits = (await call(session, "memory_search", {**ns, "query": "when does the staging password rotate"}))["hits"]
    assert hits and hits[0]["id"] == m1["id"], hits
    assert hits[0]["tags"] == ["ops"] and hits[0]["entities"] == {"env": "staging"}, hits[0]
    assert "explanation" not in hits[0]
    hits = (await call(session, "memory_search", {**ns, "query": "ORD-58213", "explain": True}))["hits"]
    top = next(h for h in hits if h["id"] == m2["id"])
    assert "structured" in top["found_by"], top
    assert top["explanation"]["paths"], top
    filtered = (await call(session, "memory_search", {**ns, "query": "password", "filters": {"tags": ["no-such-tag"]}}))
    assert filtered["count"] == 0, filtered
    ok("memory_search: top hit, structured path for an identifier, explain, tag filter")

    upd = await call(session, "memory_update", {**ns, "id": m1["id"], "importance": 0.9, "tags": ["ops", "secrets"]})
    assert abs(upd["memory"]["importance"] - 0.9) < 1e-6 and upd["memory"]["tags"] == ["ops", "secrets"], upd
    ok("memory_update")

    fb = await call(session, "memory_feedback", {**ns, "id": m1["id"], "useful": True})
    assert fb["usefulness"] == 1.0, fb
    ok("memory_feedback")

    ep = await call(session, "reflect_and_store", {**ns,
        "goal": "Migrate the orders table to the new schema",
        "steps": [
            "dumped the orders table",
            "decided to run the migration in batches of 1000 rows",
            "ALTER TABLE failed: lock wait timeout exceeded",
            "gave up and restored the dump",
        ],
        "outcome": "failure",
        "entities": {"table": "orders"}})
    assert ep["kind"] == "warning" and ep["outcome"] == "failure", ep
    assert ep["task_type"] == "modify", ep
    assert ep["method"] == "rules" and not ep["reflection_failed"], ep
    assert "lock wait timeout" in ep["lesson"], ep["lesson"]
    assert ep["key_decisions"] == ["decided to run the migration in batches of 1000 rows"], ep
    warn = (await call(session, "memory_search", {**ns, "query": "orders table migration", "filters": {"kinds": ["warning"]}}))["hits"]
    assert warn and warn[0]["id"] == ep["id"] and warn[0]["failure"], warn
    assert warn[0]["entities"] == {"table": "orders"} and warn[0]["task_type"] == "modify", warn[0]
    ok(f"reflect_and_store: failure stored as warning {ep['id']}")

    s = await call(session, "memory_summarize", {**ns, "ids": [m1["id"], ep["id"]], "max_chars": 200})
    assert s["method"] == "extractive" and s["hint"].startswith("Avoid: "), s
    assert len(s["hint"]) <= 200 and set(s["sources"]) == {m1["id"], ep["id"]}, s
    assert "lock wait timeout" in s["hint"] and "staging" in s["hint"], s
    s2 = await call(session, "memory_summarize", {**ns, "query": "staging password", "top_k": 3})
    assert m1["id"] in s2["sources"] and "staging" in s2["hint"], s2
    ok("memory_summarize: by ids and by query")

    sess = {"session_id": "sess-1"}
    e = await call(session, "working_memory_set", {**ns, **sess, "key": "plan", "value": "step 2 of 3"})
    assert e["value"] == "step 2 of 3" and "expires_at" not in e, e
    await call(session, "working_memory_set", {**ns, **sess, "key": "tmp", "value": "x", "ttl_seconds": 1})
    got = await call(session, "working_memory_get", {**ns, **sess, "key": "plan"})
    assert [x["value"] for x in got["entries"]] == ["step 2 of 3"], got
    every = await call(session, "working_memory_get", {**ns, **sess})
    assert [x["key"] for x in every["entries"]] == ["plan", "tmp"], every
    await asyncio.sleep(1.5)
    every = await call(session, "working_memory_get", {**ns, **sess})
    assert [x["key"] for x in every["entries"]] == ["plan"], f"ttl entry should have expired: {every}"
    cleared = await call(session, "working_memory_clear", {**ns, **sess})
    assert cleared["removed"] == 1, cleared
    assert (await call(session, "working_memory_get", {**ns, **sess}))["entries"] == []
    ok("working_memory set/get/ttl/clear")

    f = await call(session, "memory_forget", {**ns, "id": m2["id"], "reason": "customer asked to be forgotten"})
    assert f["status"] == "forgotten", f
    hits = (await call(session, "memory_search", {**ns, "query": "ORD-58213"}))["hits"]
    assert all(h["id"] != m2["id"] for h in hits), hits
    shown = (await call(session, "memory_search", {**ns, "query": "ORD-58213", "filters": {"statuses": ["forgotten"]}}))["hits"]
    assert any(h["id"] == m2["id"] and h["status"] == "forgotten" for h in shown), shown
    ok("memory_forget: hidden from search, kept with status forgotten")

    # bad input: every error is reported and the server keeps serving
    await expect_mcp_error(session, "no_such_tool", {}, -32602, "tool not found")
    await still_alive(session)
    await expect_tool_error(session, "memory_store", {**ns, "tags": ["x"]}, "content")
    await expect_tool_error(session, "memory_search", {**ns, "query": "x", "top_k": "five"}, "expected u32")  # rmcp's serde message names the value and type, not the field
    await expect_tool_error(session, "memory_store", {**ns, "content": "x", "colour": "red"}, "colour")
    # the server's content limit (`serve --max-content-chars`, 8000 by default)
    await expect_mcp_error(session, "memory_store", {**ns, "content": "y" * (max_content + 1)}, -32602, f"exceeds the limit of {max_content}")
    await expect_mcp_error(session, "memory_store", {**ns, "content": "   "}, -32602, "content")
    await expect_mcp_error(session, "memory_forget", {**ns, "id": "no-such-id", "reason": "x"}, -32002, "no-such-id")
    await expect_mcp_error(session, "memory_forget", {**ns, "id": m1["id"], "reason": " "}, -32602, "reason")
    await expect_mcp_error(session, "memory_update", {**ns, "id": "", "importance": 0.1}, -32602, "id")
    await expect_mcp_error(session, "memory_search", {**ns, "query": "x", "top_k": 0}, -32602, "top_k")
    await expect_mcp_error(session, "memory_summarize", {**ns}, -32602, "ids")
    await still_alive(session)
    hits = (await call(session, "memory_search", {**ns, "query": "staging database password"}))["hits"]
    assert hits and hits[0]["id"] == m1["id"], "stored data survived the bad calls"
    ok("bad input: unknown tool, missing/ill-typed/unknown argument, oversized content, invalid id -> errors; server alive")

    return {"m1": m1["id"], "m2": m2["id"], "episode": ep["id"]}
