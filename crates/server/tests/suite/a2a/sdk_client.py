"""The official A2A Python SDK (a2a-sdk) as a client of switchboard.

Usage: python sdk_client.py <gateway url> <token> <push receiver url>

Runs each scenario against the default agent, through the SDK's own card resolver, client
factory and JSON-RPC transport, and prints one JSON object of what it saw (ids left out, so the
test can compare whole values).
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

BASE, TOKEN, PUSH_URL = sys.argv[1], sys.argv[2], sys.argv[3]


def message(text, context_id=None):
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        context_id=context_id or "",
    )


def state(task):
    return TaskState.Name(task.status.state)


def artifact_text(task):
    return [p.text for a in task.artifacts for p in a.parts]


async def send(client, text, context_id=None, configuration=None):
    """The events of one send, as the SDK yields them."""
    request = SendMessageRequest(message=message(text, context_id))
    if configuration is not None:
        request.configuration.CopyFrom(configuration)
    return [event async for event in client.send_message(request)]


async def main():
    seen = {}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        card = await A2ACardResolver(http, BASE).get_agent_card()
        seen["card"] = {
            "name": card.name,
            "urls": [i.url.replace(BASE, "<base>") for i in card.supported_interfaces],
            "binding": card.supported_interfaces[0].protocol_binding,
            "version": card.supported_interfaces[0].protocol_version,
            "streaming": card.capabilities.streaming,
            "push": card.capabilities.push_notifications,
            "schemes": sorted(card.security_schemes.keys()),
        }
        plain = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)

        # send: the reply comes back as the task's artifact.
        [event] = await send(plain, "@reply pong")
        task = event.task
        seen["send"] = {"state": state(task), "artifact": artifact_text(task)}

        # get: the same task, read back.
        got = await plain.get_task(GetTaskRequest(id=task.id))
        seen["get"] = {
            "same": got.id == task.id and got.context_id == task.context_id,
            "state": state(got),
            "artifact": artifact_text(got),
        }

        # stream: a slow reply arrives as WORKING status updates, then the artifact and the
        # final status.
        kinds = []
        for event in await send(streaming, "@slow 1\n@reply one two three"):
            kind = event.WhichOneof("payload")
            if kind == "task":
                kinds.append(("task", state(event.task)))
            elif kind == "status_update":
                update = event.status_update
                text = "".join(p.text for p in update.status.message.parts)
                kinds.append(("status", TaskState.Name(update.status.state), text))
            elif kind == "artifact_update":
                kinds.append(("artifact", "".join(p.text for p in event.artifact_update.artifact.parts)))
        seen["stream"] = kinds

        # list: two tasks of one conversation, a page of one at a time.
        context = str(uuid.uuid4())
        first = (await send(plain, "@reply first", context))[0].task
        second = (await send(plain, "@reply second", context))[0].task
        page = await plain.list_tasks(ListTasksRequest(context_id=context, page_size=1))
        rest = await plain.list_tasks(
            ListTasksRequest(context_id=context, page_size=1, page_token=page.next_page_token)
        )
        seen["list"] = {
            "pages": [[t.id for t in page.tasks], [t.id for t in rest.tasks]]
            == [[second.id], [first.id]],
            "last_page_token": rest.next_page_token,
        }

        # cancel: a task that would take a minute, canceled while it waits.
        waiting = SendMessageConfiguration(return_immediately=True)
        slow = (await send(plain, "@delay 60000\n@reply late", None, waiting))[0].task
        canceled = await plain.cancel_task(CancelTaskRequest(id=slow.id))
        try:
            await plain.cancel_task(CancelTaskRequest(id=slow.id))
            again = "canceled twice"
        except TaskNotCancelableError:
            again = "TaskNotCancelableError"
        seen["cancel"] = {"state": state(canceled), "again": again}

        # subscribe: a waiting task's stream, from its state now to the end a cancel gives it.
        waiting_task = (await send(plain, "@delay 60000\n@reply late", None, waiting))[0].task
        events = []
        async for event in streaming.subscribe(SubscribeToTaskRequest(id=waiting_task.id)):
            kind = event.WhichOneof("payload")
            if kind == "task":
                events.append(["task", event.task.id == waiting_task.id])
                await plain.cancel_task(CancelTaskRequest(id=waiting_task.id))
            elif kind == "status_update":
                events.append(["status", TaskState.Name(event.status_update.status.state)])
        seen["subscribe"] = [events[0], events[-1]]

        # an unknown task id.
        try:
            await plain.get_task(GetTaskRequest(id="no-such-task"))
            seen["unknown"] = "found"
        except TaskNotFoundError:
            seen["unknown"] = "TaskNotFoundError"

        # push: a config named with the message; the receiver gets the task's pushes.
        config = SendMessageConfiguration(
            task_push_notification_config=TaskPushNotificationConfig(
                url=PUSH_URL, token="push-secret"
            )
        )
        pushed = (await send(plain, "@reply pushed", None, config))[0].task
        configs = await plain.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=pushed.id)
        )
        seen["push"] = {
            "task": pushed.id,
            "state": state(pushed),
            "configs": [(c.url == PUSH_URL, c.token) for c in configs.configs],
        }
    print(json.dumps(seen))


try:
    asyncio.run(main())
except A2AClientError as e:
    print(json.dumps({"client_error": str(e)}))
    sys.exit(1)
