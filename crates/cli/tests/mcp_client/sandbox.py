"""A sandboxed acting session stays sandboxed through MCP: acting as a session of an agent with
sandbox.mode "all", it lists only the sessions it spawned (one of them spawned here, through
MCP) and reads only those and itself; every other session — by key or by sessionId — is refused
without leaking it."""

import anyio

from common import (HANG_GUARD_SECONDS, arguments, connect, done, expect, structured,
                    tool_error)

NOT_VISIBLE = "Session not visible from this sandboxed agent session"


async def sandboxed(args) -> None:
    facts = args.facts
    boxed, hidden, child = facts["boxed"], facts["hidden"], facts["child"]
    async with connect(args, boxed) as (session, _):
        rows = structured(await session.call_tool("sessions_list", {"limit": 200}))
        keys = sorted(row["key"] for row in rows["sessions"])
        expect(keys == [child], "only its spawned child", keys)

        history = structured(await session.call_tool("sessions_history", {"sessionKey": child}))
        expect(history["sessionKey"] == child and history["messages"],
               "the spawned child's history", history)

        for reference in (hidden, facts["hiddenSessionId"], facts["otherAgent"]):
            text = tool_error(await session.call_tool(
                "sessions_history", {"sessionKey": reference}))
            expect("forbidden" in text, f"reading {reference} to be forbidden", text)
            expect(facts["hiddenText"] not in text, "nothing of the hidden session", text)
        text = tool_error(await session.call_tool("sessions_history", {"sessionKey": hidden}))
        expect(NOT_VISIBLE in text, "the sandbox named as the reason", text)

        text = tool_error(await session.call_tool(
            "sessions_send", {"sessionKey": hidden, "message": "@reply leak", "timeoutSeconds": 0}))
        expect("forbidden" in text and NOT_VISIBLE in text, "sending to be forbidden", text)

        # What it spawns through MCP it sees; still nothing else.
        spawned = structured(await session.call_tool(
            "sessions_spawn", {"task": "@reply Result: 42", "label": f"mcp-{args.transport}"}))
        expect(spawned["status"] == "accepted" and spawned["childSessionKey"],
               "sessions_spawn to be accepted", spawned)
        rows = structured(await session.call_tool("sessions_list", {"limit": 200}))
        keys = sorted(row["key"] for row in rows["sessions"])
        expect(keys == sorted([child, spawned["childSessionKey"]]),
               "the two children it spawned", keys)


async def main() -> None:
    args = arguments(__doc__)
    with anyio.fail_after(HANG_GUARD_SECONDS):
        await sandboxed(args)
    done("sandbox", args.transport)


if __name__ == "__main__":
    anyio.run(main)
