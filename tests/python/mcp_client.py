"""A client of `ontoloop mcp` built on the official MCP Python SDK (`mcp` on PyPI).

Reads a JSON plan on stdin, connects over stdio (spawning the server) or streamable HTTP, lists
the tools, makes the plan's calls in order and prints one JSON document on stdout: the tools
(name, description, input and output schemas) and, per call, whether it was an error, its
structured content and its text (or, for a call the protocol refused, the error). It asserts nothing itself: the Rust test that runs it
(services/ontoloop/tests/mcp.rs) compares what it prints with the gRPC API's answers.

The plan:
    {"transport": "stdio", "command": "/path/ontoloop", "args": ["mcp"], "env": {...}}
 or {"transport": "http", "url": "http://127.0.0.1:PORT/mcp", "token": "..." (optional)}
    plus "calls": [{"tool": "ask", "arguments": {...}}, ...]
"""

import asyncio
import contextlib
import json
import sys

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


@contextlib.asynccontextmanager
async def connect(plan):
    """The (read, write) streams of a session over the plan's transport."""
    if plan["transport"] == "stdio":
        server = StdioServerParameters(
            command=plan["command"], args=plan.get("args", []), env=plan.get("env", {})
        )
        async with stdio_client(server) as streams:
            yield streams
    elif plan["transport"] == "http":
        headers = {}
        if plan.get("token"):
            headers["Authorization"] = f"Bearer {plan['token']}"
        async with httpx2.AsyncClient(headers=headers, timeout=60.0) as http:
            async with streamable_http_client(plan["url"], http_client=http) as streams:
                yield streams
    else:
        raise ValueError(f"unknown transport {plan['transport']!r}")


def text_of(result):
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def run(plan):
    async with connect(plan) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            tools = [
                {
                    "name": tool.name,
                    "description": tool.description or "",
                    "input_schema": tool.input_schema,
                    "output_schema": tool.output_schema,
                }
                for tool in listed.tools
            ]
            results = []
            for call in plan.get("calls", []):
                try:
                    result = await session.call_tool(call["tool"], call.get("arguments", {}))
                except Exception as err:  # a protocol error (bad arguments): report it
                    results.append({"tool": call["tool"], "protocol_error": str(err)})
                    continue
                results.append(
                    {
                        "tool": call["tool"],
                        "is_error": bool(result.is_error),
                        "structured": result.structured_content,
                        "text": text_of(result),
                    }
                )
            return {"tools": tools, "results": results}


def main():
    plan = json.load(sys.stdin)
    print(json.dumps(asyncio.run(run(plan))))


if __name__ == "__main__":
    main()
