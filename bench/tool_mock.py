#!/usr/bin/env python3
"""A tool-calling variant of the bench kit's instant mock model (OpenAI Chat Completions,
streaming or not), for workloads in which the model must call a tool. Loopback only; Python 3
standard library plus the kit's mock_llm.py, whose server, endpoints and logging it reuses.

The reply to a chat completion is decided from the request's last message:
  - a tool result (role "tool")             -> the text "Tool finished." (ends the turn)
  - a user message containing `@tool NAME {JSON}` -> one call of tool NAME with those arguments;
    when the request offers no tool NAME but offers `tool_call` (the reference gateway's default
    Tool Search mode), the call is `tool_call {"id": NAME, "args": {JSON}}`
  - a user message containing a --rule's needle   -> that rule's text
  - anything else                          -> the kit mock's fixed text
The user messages looked at are those after the last assistant or tool message (this turn's), so
the text and context blocks a gateway adds around a message do not matter. Both gateways run on the same
mock, so the model's side of every workload is identical.

  python3 tool_mock.py --kit ../shared/bench [--port 18998] [--rule 'NEEDLE=>TEXT' ...]
                       [--log requests.jsonl] [--timing calls.jsonl] [--keep-alive]

--timing appends one line per chat completion, {"t0", "t1"} in seconds since the epoch: from the
moment its request line was read to the moment its last byte was written. A workload subtracts
these from its own windows to give the gateway's share (agent_load.py send --model-timing).

--keep-alive streams in chunked encoding and keeps the connection, as a provider's HTTP/1.1 or
HTTP/2 endpoint does; without it, every streamed reply closes its connection (the kit mock's way),
so every model call pays a new TCP connection and a new server thread, on either gateway.
"""
import argparse
import json
import os
import sys
import threading
import time
import uuid

DIRECTIVE = "@tool "


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def tool_call_in(text):
    """(name, arguments JSON string) of the last `@tool NAME {JSON}` in text, or None."""
    at = text.rfind(DIRECTIVE)
    if at < 0:
        return None
    rest = text[at + len(DIRECTIVE):].lstrip()
    name = rest.split(None, 1)[0] if rest else ""
    body = rest[len(name):].lstrip()
    try:
        args, _ = json.JSONDecoder().raw_decode(body)
    except ValueError:
        return None
    return name, json.dumps(args)


def decide(body, rules, default_text):
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool":
        return ("text", "Tool finished.")
    # This turn's user messages: the gateway may add its own context after the user's text.
    turn = []
    for m in reversed(messages):
        if m.get("role") != "user":
            break
        turn.append(text_of(m.get("content")))
    user = "\n".join(reversed(turn))
    call = tool_call_in(user)
    if call:
        name, arguments = call
        offered = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
        if name not in offered and "tool_call" in offered:
            # The reference's default Tool Search mode offers its session tools through
            # `tool_call {id, args}` instead of by name.
            return ("tool", ("tool_call", json.dumps({"id": name, "args": json.loads(arguments)})))
        return ("tool", call)
    for needle, reply in rules:
        if needle in user:
            return ("text", reply)
    return ("text", default_text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kit", required=True, help="the bench kit folder (holds mock_llm.py)")
    ap.add_argument("--port", type=int, default=18998)
    ap.add_argument("--rule", action="append", default=[], metavar="NEEDLE=>TEXT")
    ap.add_argument("--log", default=None)
    ap.add_argument("--timing", default=None)
    ap.add_argument("--keep-alive", action="store_true")
    args = ap.parse_args()
    rules = []
    for r in args.rule:
        if "=>" not in r:
            sys.exit(f"tool_mock: a rule is NEEDLE=>TEXT, got {r!r}")
        needle, text = r.split("=>", 1)
        rules.append((needle, text.replace("\\n", "\n")))

    sys.path.insert(0, os.path.abspath(args.kit))
    import mock_llm  # the kit's mock: its handler, SSE helpers and server class

    mock_llm.ARGS = argparse.Namespace(host="127.0.0.1", port=args.port, model="mock-model",
                                       text="Hello from the mock model.", delay_ms=0,
                                       log=args.log, verbose=False)

    timing_lock = threading.Lock()

    class Handler(mock_llm.Handler):
        # A kept connection's small writes would otherwise wait for the peer's delayed ACK.
        disable_nagle_algorithm = args.keep_alive

        def parse_request(self):
            self.began = time.time()
            return super().parse_request()

        def do_POST(self):
            self.chunked = False
            super().do_POST()
            if self.chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            if args.timing:
                with timing_lock, open(args.timing, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"t0": self.began, "t1": time.time()}) + "\n")

        def _sse_start(self):
            if not args.keep_alive:
                return super()._sse_start()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.chunked = True

        def _sse(self, obj, event=None):
            if not args.keep_alive:
                return super()._sse(obj, event)
            s = ("event: %s\n" % event) if event else ""
            s += "data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n"
            data = s.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def chat(self, body):
            kind, what = decide(body, rules, mock_llm.ARGS.text)
            cid = "chatcmpl-" + uuid.uuid4().hex[:24]
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            base = {"id": cid, "created": int(time.time()), "model": body.get("model") or "mock-model"}
            if kind == "text":
                return self.text(body, base, usage, what)
            name, arguments = what
            call_id = "call_" + uuid.uuid4().hex[:24]
            call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            if not body.get("stream"):
                return self._json(200, dict(base, object="chat.completion", usage=usage, choices=[
                    {"index": 0, "finish_reason": "tool_calls",
                     "message": {"role": "assistant", "content": None, "tool_calls": [call]}}]))
            self._sse_start()
            base["object"] = "chat.completion.chunk"
            self._sse(dict(base, choices=[{"index": 0, "finish_reason": None, "delta": {
                "role": "assistant", "content": None,
                "tool_calls": [dict(call, index=0, function={"name": name, "arguments": ""})]}}]))
            self._sse(dict(base, choices=[{"index": 0, "finish_reason": None, "delta": {
                "tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}}]))
            self._sse(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]))
            if (body.get("stream_options") or {}).get("include_usage"):
                self._sse(dict(base, choices=[], usage=usage))
            self._sse("[DONE]")

        def text(self, body, base, usage, text):
            """The kit mock's text reply (role, the text in two parts, stop), with this text."""
            if not body.get("stream"):
                return self._json(200, dict(base, object="chat.completion", usage=usage, choices=[
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]))
            self._sse_start()
            base["object"] = "chat.completion.chunk"
            self._sse(dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                           "finish_reason": None}]))
            half = max(1, len(text) // 2)
            for part in (text[:half], text[half:]):
                if part:
                    self._sse(dict(base, choices=[{"index": 0, "delta": {"content": part}, "finish_reason": None}]))
            self._sse(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
            if (body.get("stream_options") or {}).get("include_usage"):
                self._sse(dict(base, choices=[], usage=usage))
            self._sse("[DONE]")

    class Server(mock_llm.Server):
        request_queue_size = 256  # many gateways' runs connect at once; the default queue is 5

    srv = Server(("127.0.0.1", args.port), Handler)
    print(f"tool_mock listening on http://127.0.0.1:{args.port}/v1", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
