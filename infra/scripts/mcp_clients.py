#!/usr/bin/env python3
"""Checks of Switchyard's MCP server (`/mcp`) with the official MCP Python SDK (PyPI `mcp`).

Usage: mcp_clients.py MCP_URL ALL_KEY TOOLS_KEY   (run by chat-clients.sh against a
`switchyard serve` whose `auth` gives ALL_KEY every datasource and TOOLS_KEY only `tools`)
"""

import asyncio
import json
import sys

import httpx2
import mcp
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def check(condition: bool, what: str) -> None:
    if not condition:
        print(f"mcp_clients: FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"mcp_clients: ok: {what}")


def client(url: str, key: str | None) -> Client:
    headers = {"x-api-key": key} if key else {}
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)))


def text_of(result) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def main() -> None:
    url, all_key, tools_key = sys.argv[1:4]

    async with client(url, all_key) as session:
        tools = sorted(tool.name for tool in (await session.list_tools()).tools)
        check(tools == ["ask", "list_datasources", "route"], f"three tools listed ({tools})")

        result = await session.call_tool("ask", {"query": "What is 15% of 200?"})
        check(not result.is_error and "30" in text_of(result), f"ask answers 15% of 200 ({text_of(result)!r})")
        metadata = result.structured_content["metadata"]
        check(metadata["template_id"] == "calculator_percentage", "the structured result names the template")

        first = await session.call_tool(
            "ask", {"query": "How many employees work in Engineering?", "session_id": "mcp-conversation"}
        )
        check("14" in text_of(first), f"a first turn in a session ({text_of(first)!r})")
        follow = await session.call_tool("ask", {"query": "And in Sales?", "session_id": "mcp-conversation"})
        check("Sales" in text_of(follow), f"the follow-up answers with Sales ({text_of(follow)!r})")

        routed = await session.call_tool("route", {"query": "What is 15% of 200?"})
        check(
            routed.structured_content["routing_decision"]["selected_template"] == "calculator_percentage",
            "route gives the decision only",
        )

        for question in ["What is 10**1000000 of 2?", "What is 1e308 times 10?", "What is 1e308 * 1e308?"]:
            result = await session.call_tool("ask", {"query": question})
            said = text_of(result)
            check(
                ("does not have" in said or "overflow" in said or "not read exactly" in said or "not `" in said)
                and " = " not in said,
                f"{question!r} is refused saying why, not answered as another operation ({said!r})",
            )

        try:
            await session.call_tool("forecast", {})
            check(False, "an unknown tool is refused")
        except mcp.MCPError as error:
            check("unknown tool `forecast`" in str(error), f"an unknown tool is a protocol error ({error})")
        try:
            await session.call_tool("ask", {"query": "hi", "colour": "red"})
            check(False, "an unknown argument is refused")
        except mcp.MCPError as error:
            check("colour" in str(error), f"an unknown argument names the field ({error})")
        try:
            await session.call_tool("ask", {"query": 42})
            check(False, "a non-string query is refused")
        except mcp.MCPError as error:
            check("query" in str(error), f"a non-string query names the field ({error})")
        try:
            await session.call_tool("ask", {"query": "x" * 5000})
            check(False, "an over-long question is refused")
        except mcp.MCPError as error:
            check("query" in str(error) and "2000" in str(error), f"an over-long question names the field and limit ({error})")

    async with client(url, tools_key) as session:
        listed = (await session.call_tool("list_datasources", {})).structured_content["datasources"]
        names = [d["name"] for d in listed]
        check(names == ["tools"], f"a caller restricted to tools sees only tools ({names})")
        result = await session.call_tool("ask", {"query": "How many employees work in Engineering?"})
        check("14 employees" not in text_of(result), f"and cannot reach hr through ask ({text_of(result)!r})")

    # An unknown caller gets the protocol's error, not a tool list.
    async with httpx2.AsyncClient() as raw:
        response = await raw.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"x-api-key": "not-a-key", "accept": "application/json, text/event-stream"},
        )
        body = response.json()
        check(
            response.status_code == 401 and "error" in body and "tools" not in json.dumps(body),
            f"an unknown caller gets a JSON-RPC error with 401 ({response.status_code}: {body})",
        )
    refused = False
    try:
        async with client(url, "not-a-key") as session:
            await session.list_tools()
    except Exception:  # the SDK raises its transport's error for the 401
        refused = True
    check(refused, "the SDK client of an unknown caller gets no tool list")

    # A malformed JSON-RPC message gets a JSON-RPC error, and the server keeps serving.
    async with httpx2.AsyncClient() as raw:
        response = await raw.post(
            url,
            content=b"{not json",
            headers={"x-api-key": all_key, "content-type": "application/json", "accept": "application/json, text/event-stream"},
        )
        check(response.status_code >= 400, f"a malformed message is refused ({response.status_code}: {response.text[:120]!r})")
    async with client(url, all_key) as session:
        tools = (await session.list_tools()).tools
        check(len(tools) == 3, "the server keeps serving")


if __name__ == "__main__":
    asyncio.run(main())
