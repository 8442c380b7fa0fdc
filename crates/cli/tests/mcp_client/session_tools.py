"""The session tools through a real MCP client, acting as the default agent's main session:
initialize, tools/list (the core registry's tools and schemas), tools/call of sessions_list,
sessions_history and sessions_send (with progress), bad arguments, an unknown acting session,
and cancellation of a long wait."""

import warnings

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from common import (HANG_GUARD_SECONDS, arguments, connect, done, expect, mcp_error,
                    structured, tool_error)

# sessions_spawn included: a tool registered in the core shows up here with no MCP change.
SESSION_TOOLS = {"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "agents_list"}


def texts_of(history: dict) -> list:
    return [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
            for m in history["messages"]]


async def tools_and_calls(args) -> None:
    facts = args.facts
    group = facts["group"]
    async with connect(args, "main") as (session, init):
        expect(init.server_info.name == "switchboard", "serverInfo.name switchboard",
               init.server_info)
        expect(init.capabilities.tools is not None, "the tools capability", init.capabilities)

        listed = await session.list_tools()
        got = [{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
               for t in listed.tools]
        # Exactly what the gateway's tools.list (the core registry) says for this session.
        expected = [{k: v for k, v in t.items() if k not in ("annotations", "group")}
                    for t in facts["expectedTools"]]
        expect(got == expected, "the tools and schemas of tools.list", got)
        hints = {t.name: t.annotations.model_dump(by_alias=True, exclude_none=True)
                 for t in listed.tools if t.annotations}
        expect(hints == {t["name"]: t["annotations"] for t in facts["expectedTools"]
                         if "annotations" in t},
               "the annotations of tools.list", hints)
        expect(SESSION_TOOLS <= {t["name"] for t in got}, f"at least {SESSION_TOOLS}", got)
        for tool in got:
            expect(tool["inputSchema"].get("type") == "object", "object input schemas", tool)
        strict_schemas(listed.tools)

        rows = structured(await session.call_tool("sessions_list", {"limit": 50}))
        keys = [row["key"] for row in rows["sessions"]]
        expect(group in keys, f"{group} in sessions_list", keys)
        expect(rows["count"] == len(rows["sessions"]), "count = number of rows", rows)

        history = structured(await session.call_tool(
            "sessions_history", {"sessionKey": group, "limit": 10}))
        expect(history["sessionKey"] == group, "the history of the group", history)
        expect(facts["groupText"] in texts_of(history), "the seeded message in the history",
               history)

        progress = []

        async def on_progress(value, total, message):
            progress.append((value, total, message))

        sent = structured(await session.call_tool(
            "sessions_send",
            {"sessionKey": group, "message": "@reply pong from dev", "timeoutSeconds": 60},
            progress_callback=on_progress,
        ))
        expect(sent["status"] == "ok" and sent["reply"] == "pong from dev",
               "sessions_send to answer the target's reply", sent)
        expect(sent["sessionKey"] == group and sent["runId"], "runId and sessionKey", sent)
        expect(progress and progress[0][1] == 60 and "sessions_send" in progress[0][2],
               "progress while waiting, with timeoutSeconds as total", progress)

        # A tool's own refusals and mistakes are isError results that say what to fix.
        text = tool_error(await session.call_tool("sessions_history", {}))
        expect("sessionKey required" in text, "'sessionKey required'", text)
        text = tool_error(await session.call_tool("sessions_list", {"limit": "lots"}))
        expect("limit" in text and "schema" in text, "the bad field and the schema", text)
        text = tool_error(await session.call_tool(
            "sessions_send", {"sessionKey": "cron:nowhere", "message": "hi", "timeoutSeconds": 0}))
        expect("cron:nowhere" in text and "sessions_list" in text,
               "the missing target and how to find one", text)

        # Calls the server cannot make are MCP errors that say what to fix.
        error = await mcp_error(session.call_tool("sessions_delete_everything", {}))
        expect("unknown tool" in error.error.message and "sessions_list" in error.error.message,
               "an unknown tool error listing the tools", error.error)
        # The SDK's own call_tool only sends objects: build the request around its validation.
        params = types.CallToolRequestParams.model_construct(
            name="sessions_list", arguments=["limit", 5])
        request = types.CallToolRequest.model_construct(method="tools/call", params=params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pydantic: "arguments" is not a dict, as intended
            error = await mcp_error(session.send_request(request, types.CallToolResult))
        expect(error.error.code == -32602 and "must be a JSON object" in error.error.message,
               "arguments that are not an object to be invalid params", error.error)


# (tool, arguments, whether a strict validator accepts them)
SCHEMA_CASES = [
    ("sessions_send", {"sessionKey": "main", "message": "hi"}, True),
    ("sessions_send", {"label": "ops", "message": "hi", "timeoutSeconds": 0}, True),
    ("sessions_send", {"sessionKey": "main"}, False),  # message is required
    ("sessions_send", {"message": "hi"}, False),  # a target is required
    ("sessions_send", {"sessionKey": "main", "label": "ops", "message": "hi"}, False),  # not both
    ("sessions_send", {"sessionKey": None, "message": "hi"}, False),  # omitted, never null
    ("sessions_spawn", {"task": "t", "cleanup": "delete"}, True),
    ("sessions_spawn", {"task": "t", "cleanup": "maybe"}, False),
    ("sessions_spawn", {"label": "x"}, False),  # task is required
    ("sessions_list", {"kinds": ["group", "cron"], "limit": 5}, True),
    ("sessions_list", {"kinds": ["bogus"]}, False),
    ("sessions_history", {"sessionKey": "main", "limit": 5}, True),
    ("sessions_history", {"label": "ops"}, True),
    ("sessions_history", {}, False),
    ("agents_list", {}, True),
]


def strict_schemas(tools) -> None:
    """Every input schema is valid JSON Schema (2020-12), a strict validator accepts exactly
    the calls the tools accept, every field is described, and the annotations say which tools
    only read."""
    from jsonschema import Draft202012Validator

    by_name = {tool.name: tool for tool in tools}
    for tool in tools:
        Draft202012Validator.check_schema(tool.input_schema)
        for name, field in tool.input_schema.get("properties", {}).items():
            expect(field.get("description"), f"a description on {tool.name}.{name}", field)
            expect(isinstance(field.get("type"), str),
                   f"{tool.name}.{name} typed as one type (not [X, \"null\"])", field)
    for name, arguments, accepted in SCHEMA_CASES:
        valid = Draft202012Validator(by_name[name].input_schema).is_valid(arguments)
        expect(valid == accepted, f"{name} {arguments} {'accepted' if accepted else 'refused'}",
               by_name[name].input_schema)
    for name in ("sessions_list", "sessions_history", "agents_list", "sessions_send",
                 "sessions_spawn"):
        hints = by_name[name].annotations
        expect(hints is not None, f"annotations on {name}", by_name[name])
        hints = hints.model_dump(by_alias=True, exclude_none=True)
        reads = name not in ("sessions_send", "sessions_spawn")
        expect(hints.get("readOnlyHint") is reads, f"readOnlyHint {reads} on {name}", hints)
        expect(hints.get("destructiveHint") is False, f"destructiveHint false on {name}", hints)


def first_mcp_error(error: BaseException):
    """The MCPError in `error` or, when task groups wrapped it, in its exception group."""
    if isinstance(error, MCPError):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = first_mcp_error(inner)
        if found is not None:
            return found
    return None


async def unknown_session(args) -> None:
    what = "an unknown acting session to be an error that says what to fix"
    if args.transport == "http":
        # Over HTTP the gateway checks the acting session before MCP: initialize fails.
        try:
            async with connect(args, "agent:main:nobody"):
                raise AssertionError("expected initialize to fail for an unknown acting session")
        except BaseException as raised:  # the SDK's task groups may wrap the MCPError
            error = first_mcp_error(raised)
            if error is None:
                raise
            message = error.error.message
            expect("Session not found: agent:main:nobody" in message and "must exist" in message,
                   what, message)
        return
    async with connect(args, "agent:main:nobody") as (session, _):
        for call in (session.list_tools(), session.call_tool("sessions_list", {})):
            error = await mcp_error(call)
            message = error.error.message
            expect("Session not found: agent:main:nobody" in message and "must exist" in message,
                   what, message)


async def cancelled_wait(args) -> None:
    slow = args.facts["slow"][args.transport]
    async with connect(args, "main", header=True) as (session, _):
        first_progress = anyio.Event()
        outcome = {}

        async def on_progress(value, total, message):
            first_progress.set()

        async def long_send():
            try:
                outcome["result"] = await session.call_tool(
                    "sessions_send",
                    {"sessionKey": slow, "message": "@delay 600000\n@reply late",
                     "timeoutSeconds": 600},
                    progress_callback=on_progress,
                )
            except anyio.get_cancelled_exc_class():
                outcome["cancelled"] = True
                raise

        async with anyio.create_task_group() as group:
            group.start_soon(long_send)
            await first_progress.wait()
            # Abandoning the call sends notifications/cancelled.
            group.cancel_scope.cancel()
        expect(outcome == {"cancelled": True}, "the call to be cancelled, not answered", outcome)

        # The connection goes on, and so does the send: its message reaches the target session
        # (the server finishes the call it stopped waiting for, so look until it is there).
        while True:
            history = structured(await session.call_tool("sessions_history", {"sessionKey": slow}))
            if "@delay 600000\n@reply late" in texts_of(history):
                break
            await anyio.sleep(0.1)


async def main() -> None:
    args = arguments(__doc__)
    with anyio.fail_after(HANG_GUARD_SECONDS):
        await tools_and_calls(args)
        await unknown_session(args)
        await cancelled_wait(args)
    done("session tools", args.transport)


if __name__ == "__main__":
    anyio.run(main)
