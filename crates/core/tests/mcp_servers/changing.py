"""A stdio MCP server on the official MCP Python SDK whose tool list changes: calling `unlock`
adds the tool `secret` and says so with the SDK's own calls, both ways the protocol has:
notifications/tools/list_changed on the session (up to 2025-11-25) and the event that
`subscriptions/listen` subscribers get (2026-07-28)."""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing")


def secret() -> str:
    """Answers the secret (offered only after unlock)."""
    return "opened"


@server.tool()
async def unlock(ctx: Context) -> str:
    """Adds the tool secret and says the tool list changed."""
    server.add_tool(secret)
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()
    return "unlocked"


server.run()
