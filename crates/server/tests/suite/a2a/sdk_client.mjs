// The official A2A JavaScript SDK (@a2a-js/sdk) as a client of switchboard.
//
// Usage: node sdk_client.mjs <gateway url> <token>
//
// Resolves the default agent's card and sends through the SDK's own client factory and JSON-RPC
// transport: one message answered whole, one streamed. Prints one JSON object of what it saw.

import { randomUUID } from "node:crypto";
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";

const [base, token] = process.argv.slice(2);

// Every request carries the gateway token (the card's bearer scheme).
const fetchImpl = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(url, { ...init, headers });
};

const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }),
);

const message = (text) => ({
  messageId: randomUUID(),
  contextId: "",
  taskId: "",
  role: 1, // ROLE_USER
  parts: [{ content: { $case: "text", value: text } }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

const request = (text) => ({
  tenant: "",
  message: message(text),
  configuration: undefined,
  metadata: undefined,
});

const texts = (parts) => parts.map((p) => (p.content?.$case === "text" ? p.content.value : "?"));
const STATES = {
  1: "SUBMITTED", 2: "WORKING", 3: "COMPLETED", 4: "FAILED", 5: "CANCELED",
};

const client = await factory.createFromUrl(base);
const seen = {};

const answer = await client.sendMessage(request("@reply pong"));
const task = answer.payload?.$case === "task" ? answer.payload.value : answer;
seen.send = {
  state: STATES[task.status?.state] ?? String(task.status?.state),
  artifact: (task.artifacts ?? []).flatMap((a) => texts(a.parts)),
};

const events = [];
for await (const event of client.sendMessageStream(request("@slow 1\n@reply one two three"))) {
  const { $case, value } = event.payload ?? {};
  if ($case === "task") events.push(["task", STATES[value.status.state]]);
  else if ($case === "statusUpdate")
    events.push(["status", STATES[value.status.state], texts(value.status.message?.parts ?? []).join("")]);
  else if ($case === "artifactUpdate") events.push(["artifact", texts(value.artifact.parts).join("")]);
  else events.push(["other", String($case)]);
}
seen.stream = events;
console.log(JSON.stringify(seen));
