"""Shared by the MCP checks: connect to switchboard with the official MCP Python SDK, over stdio
(`switchboard mcp --session KEY`, spawned here) or streamable HTTP (the gateway's `/mcp`), and
fail loudly. Run by crates/cli/tests/suite/mcp.rs; every failed expectation exits non-zero."""

import argparse
import contextlib
import json
import sys

import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

# A hang guard for a whole script, not a timing expectation.
HANG_GUARD_SECONDS = 180


def arguments(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    parser.add_argument("--bin", help="the switchboard binary (stdio)")
    parser.add_argument("--state-dir", help="the gateway's state dir (stdio)")
    parser.add_argument("--gateway-url", help="the gateway's ws:// URL (stdio)")
    parser.add_argument("--mcp-url", help="the gateway's http://…/mcp URL (http)")
    parser.add_argument("--token", required=True)
    parser.add_argument("--facts", required=True, help="a JSON file of what the test seeded")
    args = parser.parse_args()
    with open(args.facts, encoding="utf-8") as f:
        args.facts = json.load(f)
    return args


def expect(condition: bool, what: str, got: object = None) -> None:
    if not condition:
        detail = "" if got is None else f"\n  got: {got!r}"
        raise AssertionError(f"expected {what}{detail}")


@contextlib.asynccontextmanager
async def connect(args: argparse.Namespace, session_key: str, header: bool = False):
    """An initialized ClientSession acting as `session_key`, and its initialize result. Over
    HTTP the session goes in `?session=` (or, with `header`, in X-Switchboard-Session)."""
    if args.transport == "stdio":
        server = StdioServerParameters(
            command=args.bin,
            args=["mcp", "--session", session_key, "--url", args.gateway_url,
                  "--state-dir", args.state_dir],
            env={"SWITCHBOARD_TOKEN": args.token},
        )
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write) as session:
                yield session, await session.initialize()
        return
    headers = {"Authorization": f"Bearer {args.token}"}
    url = args.mcp_url
    if header:
        headers["X-Switchboard-Session"] = session_key
    else:
        url = f"{url}?session={session_key}"
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                yield session, await session.initialize()


def structured(result) -> dict:
    """A successful tool result: its JSON, checked to be the same as text and as structure."""
    text = result.content[0].text
    expect(not result.is_error, "a result without isError", text)
    expect(json.loads(text) == result.structured_content,
           "the text content to be the structuredContent as JSON", text)
    return result.structured_content


def tool_error(result) -> str:
    """An isError tool result: its text."""
    text = result.content[0].text
    expect(result.is_error, "an isError result", text)
    return text


async def mcp_error(call) -> MCPError:
    """The MCP (JSON-RPC) error `call` raises."""
    try:
        value = await call
    except MCPError as error:
        return error
    raise AssertionError(f"expected an MCP error, got {value!r}")


def done(name: str, transport: str) -> None:
    print(f"{name} over {transport}: all checks passed")
    sys.stdout.flush()
