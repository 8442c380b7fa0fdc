"""A person with an end-to-end encrypting Matrix client, for the Matrix channel's tests.

matrix-nio with its e2e extra on libolm (Debian's python3-olm): an implementation of Olm and
Megolm that shares no code with the bot's (matrix-sdk on vodozemac). It logs in as a new device,
syncs in the background (uploading and querying keys, claiming one-time keys, decrypting), and
takes one JSON command per line on stdin, answering one JSON line on stdout:

  {"op": "create", "invite": ["@bot:hs"], "encrypted": true, "direct": true} -> {"room": id}
  {"op": "join", "room": id}                                         -> {}
  {"op": "say", "room": id, "body": text, "mentions": [ids], "devices_of": [ids]}
      -> {"event_id": id}, once the client knows a device of each of `devices_of`
  {"op": "say_withheld", "room": id, "body": text, "devices_of": [ids]}
      -> {"event_id": id}: said with its key kept from the devices of `devices_of`
  {"op": "wait", "room": id, "sender": id, "count": n, "timeout": s}
      -> {"messages": [{"body", "msgtype", "encrypted"}]} once n have arrived, or {"error"}
  {"op": "encrypted", "room": id}                                    -> {"encrypted": bool}

Usage: person.py HOMESERVER USER_ID PASSWORD STORE_DIR
"""

import asyncio
import json
import sys
import time

from nio import (
    AsyncClient,
    AsyncClientConfig,
    MegolmEvent,
    RoomMessageNotice,
    RoomMessageText,
)

ENCRYPTION = {
    "type": "m.room.encryption",
    "state_key": "",
    "content": {"algorithm": "m.megolm.v1.aes-sha2"},
}


class Person:
    def __init__(self, client):
        self.client = client
        self.received = []
        client.add_event_callback(self.message, (RoomMessageText, RoomMessageNotice))
        client.add_event_callback(self.undecrypted, (MegolmEvent,))

    async def message(self, room, event):
        self.received.append({
            "room": room.room_id,
            "sender": event.sender,
            "body": event.body,
            "msgtype": "m.notice" if isinstance(event, RoomMessageNotice) else "m.text",
            "encrypted": bool(getattr(event, "decrypted", False)),
        })

    async def undecrypted(self, room, event):
        self.received.append({
            "room": room.room_id,
            "sender": event.sender,
            "body": None,
            "msgtype": "undecryptable",
            "encrypted": True,
        })

    async def keys(self):
        client = self.client
        if client.should_upload_keys:
            await client.keys_upload()
        if client.should_query_keys:
            await client.keys_query()
        if client.should_claim_keys:
            await client.keys_claim(client.get_users_for_key_claiming())

    async def devices_of(self, users, within=60):
        """Queries keys until every one of `users` has a device with keys (a client that sends
        before it knows a device leaves that device without the message's key)."""
        client = self.client
        deadline = time.monotonic() + within
        while True:
            await self.keys()
            missing = [u for u in users if not list(client.device_store.active_user_devices(u))]
            if not missing or time.monotonic() > deadline:
                return
            client.olm.users_for_key_query.update(missing)
            await asyncio.sleep(0.1)

    async def handle(self, command):
        op = command["op"]
        client = self.client
        if op == "create":
            initial = [ENCRYPTION] if command.get("encrypted", True) else []
            answer = await client.room_create(
                invite=command.get("invite", []),
                is_direct=command.get("direct", False),
                initial_state=initial,
            )
            return {"room": answer.room_id}
        if op == "join":
            await client.join(command["room"])
            return {}
        if op == "say":
            room = command["room"]
            await client.joined_members(room)
            await self.devices_of(command.get("devices_of", []))
            content = {"msgtype": "m.text", "body": command["body"]}
            if command.get("mentions"):
                content["m.mentions"] = {"user_ids": command["mentions"]}
            answer = await client.room_send(
                room, "m.room.message", content, ignore_unverified_devices=True
            )
            return {"event_id": answer.event_id}
        if op == "say_withheld":
            return await self.say_withheld(command)
        if op == "wait":
            return await self.wait(command)
        if op == "encrypted":
            room = client.rooms.get(command["room"])
            return {"encrypted": bool(room and room.encrypted)}
        return {"error": f"unknown op {op}"}

    async def say_withheld(self, command):
        """Says `body` with the message's key kept from the devices of `devices_of` (as if the
        client did not know them): they receive a message they cannot decrypt. The next message
        starts a new session, shared with everyone."""
        client = self.client
        room = command["room"]
        await client.joined_members(room)
        await self.devices_of(command["devices_of"])
        kept = [d for u in command["devices_of"] for d in client.device_store.active_user_devices(u)]
        for device in kept:
            client.blacklist_device(device)
        content = {"msgtype": "m.text", "body": command["body"]}
        try:
            answer = await client.room_send(
                room, "m.room.message", content, ignore_unverified_devices=True
            )
        finally:
            for device in kept:
                client.unblacklist_device(device)
            client.olm.outbound_group_sessions.pop(room, None)
        return {"event_id": answer.event_id}

    async def wait(self, command):
        deadline = time.monotonic() + command.get("timeout", 60)
        while True:
            found = [
                {k: m[k] for k in ("body", "msgtype", "encrypted")}
                for m in self.received
                if m["room"] == command["room"] and m["sender"] == command["sender"]
            ]
            if len(found) >= command["count"] or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        if len(found) < command["count"]:
            return {"error": f"{len(found)} of {command['count']} messages", "messages": found}
        return {"messages": found}


async def main():
    homeserver, user, password, store = sys.argv[1:5]
    config = AsyncClientConfig(encryption_enabled=True, store_sync_tokens=True)
    client = AsyncClient(homeserver, user, store_path=store, config=config)
    login = await client.login(password, device_name="test person")
    if not getattr(login, "access_token", None):
        print(json.dumps({"error": f"login: {login}"}), flush=True)
        return
    person = Person(client)
    await client.sync(timeout=0, full_state=True)
    await person.keys()
    syncing = asyncio.create_task(client.sync_forever(timeout=500, loop_sleep_time=100))
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    print(json.dumps({"ready": True, "device_id": client.device_id}), flush=True)
    while True:
        line = await reader.readline()
        if not line:
            break
        try:
            answer = await person.handle(json.loads(line))
        except Exception as e:  # the test reads the failure
            answer = {"error": repr(e)}
        print(json.dumps(answer), flush=True)
    syncing.cancel()
    await client.close()


asyncio.run(main())
