"""A tiny A2A 1.0 agent built with the official Python SDK (a2a-sdk), the remote that a
switchboard agent messages through sessions_send in crates/core/tests/suite/a2a_client.rs.

It answers every message with "remote says: <text> (turn N)", N counting the messages of the
message's context, so a test sees whether a second send continued the same contextId. It
serves its agent card at /.well-known/agent-card.json and JSON-RPC at /rpc, and requires
`Authorization: Bearer <token>` when started with a token.

Usage: python remote_agent.py PORT [TOKEN]
"""

import collections
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import JSONResponse

from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
)

PORT = int(sys.argv[1])
TOKEN = sys.argv[2] if len(sys.argv) > 2 else None
TURNS = collections.Counter()


class Echo(AgentExecutor):
    async def execute(self, context, event_queue):
        TURNS[context.context_id] += 1
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        text = f"remote says: {context.get_user_input()} (turn {TURNS[context.context_id]})"
        await updater.add_artifact([new_text_part(text)], name="reply")
        await updater.complete(updater.new_agent_message([new_text_part(text)]))

    async def cancel(self, context, event_queue):
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class Bearer(BaseHTTPMiddleware):
    async def dispatch(self, request, call_next):
        if TOKEN and request.url.path == "/rpc":
            if request.headers.get("authorization") != f"Bearer {TOKEN}":
                return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401)
        return await call_next(request)


card = AgentCard(
    name="echo",
    description="Answers every message with 'remote says: <text>'.",
    version="1.0.0",
    supported_interfaces=[
        AgentInterface(
            url=f"http://127.0.0.1:{PORT}/rpc", protocol_binding="JSONRPC", protocol_version="1.0"
        )
    ],
    capabilities=AgentCapabilities(streaming=False),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[AgentSkill(id="echo", name="echo", description="echoes", tags=["echo"])],
)
handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/rpc"))
app.add_middleware(Bearer)
uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
