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
                       [--log requests.jsonl] [--timing calls.jsonl] [--keep-alive | --one-write]

--timing appends one line per chat completion, {"t0", "t1"} in seconds since the epoch: from the
moment its request line was read to the moment its last byte was written. A workload subtracts
these from its own windows to give the gateway's share (agent_load.py send --model-timing).

--keep-alive streams in chunked encoding and keeps the connection, as a provider's HTTP/1.1 or
HTTP/2 endpoint does; without it, every streamed reply closes its connection (the kit mock's way),
so every model call pays a new TCP connection and a new server thread, on either gateway.

--one-write serves the same answers from one asyncio event loop instead of the kit's server: a
request's head parsed by hand, the whole answer (every event, chunked) in one write, connections
kept. The kit's server spends ~0.27 ms of Python CPU a call, which a workload's window counts as the
model's; this spends a fraction of it (BENCHMARKS.md, "the mock's own time"). It serves
POST .../chat/completions, GET /v1/models and GET /health only (404 with a reason otherwise).
"""
import argparse
import asyncio
import json
import os
import socket
import sys
import threading
import time
import uuid

DIRECTIVE = "@tool "
DEFAULT_TEXT = "Hello from the mock model."  # the kit mock's text


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


def reply(body, rules, default_text):
    """The answer to a chat completion: ("json", object) when not streamed, else ("sse", the
    events' data in order, each an object or the string "[DONE]")."""
    kind, what = decide(body, rules, default_text)
    cid = "chatcmpl-" + uuid.uuid4().hex[:24]
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    base = {"id": cid, "created": int(time.time()), "model": body.get("model") or "mock-model"}
    stream = body.get("stream")
    if kind == "text":
        # The kit mock's text reply (role, the text in two parts, stop), with this text.
        if not stream:
            return "json", dict(base, object="chat.completion", usage=usage, choices=[
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": what}}])
        base["object"] = "chat.completion.chunk"
        events = [dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                       "finish_reason": None}])]
        half = max(1, len(what) // 2)
        events += [dict(base, choices=[{"index": 0, "delta": {"content": part}, "finish_reason": None}])
                   for part in (what[:half], what[half:]) if part]
        finish = "stop"
    else:
        name, arguments = what
        call = {"id": "call_" + uuid.uuid4().hex[:24], "type": "function",
                "function": {"name": name, "arguments": arguments}}
        if not stream:
            return "json", dict(base, object="chat.completion", usage=usage, choices=[
                {"index": 0, "finish_reason": "tool_calls",
                 "message": {"role": "assistant", "content": None, "tool_calls": [call]}}])
        base["object"] = "chat.completion.chunk"
        events = [dict(base, choices=[{"index": 0, "finish_reason": None, "delta": {
                      "role": "assistant", "content": None,
                      "tool_calls": [dict(call, index=0, function={"name": name, "arguments": ""})]}}]),
                  dict(base, choices=[{"index": 0, "finish_reason": None, "delta": {
                      "tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}}])]
        finish = "tool_calls"
    events.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append(dict(base, choices=[], usage=usage))
    events.append("[DONE]")
    return "sse", events


class OneWrite(asyncio.Protocol):
    """--one-write: one connection of the mock served on asyncio's event loop, each answer in one
    write (its head and every event, chunked), the connection kept. The kit's server parses a
    request's head with the email package on a thread of its own and writes each event apart; this
    costs the model's side of a call a fraction of that, so that a workload's window holds less of
    the mock's own time on either gateway. The answers are the same (`reply`)."""

    def __init__(self, answer, timing):
        self.answer, self.timing, self.buf, self.began = answer, timing, b"", None

    def connection_made(self, transport):
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data):
        if self.began is None:
            self.began = time.time()
        self.buf += data
        while True:
            request = take_request(self.buf)
            if request is None:
                return
            (method, path, headers, body), self.buf = request
            close = headers.get("connection", "").lower() == "close" or method is None
            self.transport.write(self.answer(method, path, body, close))
            if self.timing is not None and method == "POST":
                self.timing.write(json.dumps({"t0": self.began, "t1": time.time()}) + "\n")
                self.timing.flush()
            self.began = time.time() if self.buf else None
            if close:
                self.transport.close()
                return


def take_request(buf):
    """((method, path, lower-cased headers, body bytes), the bytes after it) for the first whole
    HTTP/1.1 request in buf (its body by Content-Length or chunked), or None while it is partial."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = buf[:end].decode("latin-1").split("\r\n")
    words = lines[0].split(" ")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    rest = buf[end + 4:]
    if len(words) != 3 or not words[2].startswith("HTTP/1."):
        return (None, lines[0], headers, b""), b""  # answered 400 (method None), then closed
    method, path = words[0], words[1]
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body, at = b"", 0
        while True:
            eol = rest.find(b"\r\n", at)
            if eol < 0:
                return None
            try:
                size = int(rest[at:eol].split(b";")[0], 16)
            except ValueError:
                return (None, "chunk size: %r" % rest[at:eol][:50], headers, b""), b""
            if len(rest) < eol + 2 + size + 2:
                return None
            body += rest[eol + 2:eol + 2 + size]
            at = eol + 2 + size + 2
            if size == 0:
                return (method, path, headers, body), rest[at:]
    n = headers.get("content-length") or "0"
    if not n.isdigit():
        return (None, "Content-Length: " + n, headers, b""), b""
    n = int(n)
    if len(rest) < n:
        return None
    return (method, path, headers, rest[:n]), rest[n:]


def one_write_answer(rules, default_text, log):
    """The bytes of the whole answer to one request, for OneWrite."""
    def head(status, kind, extra, close):
        conn = b"Connection: close\r\n" if close else b""
        return b"HTTP/1.1 %s\r\nContent-Type: %s\r\n%s%s\r\n" % (status, kind, conn, extra)

    def whole(status, obj, close):
        data = json.dumps(obj).encode()
        return head(status, b"application/json", b"Content-Length: %d\r\n" % len(data), close) + data

    def answer(method, path, raw, close):
        if method is None:
            return whole(b"400 Bad Request", {"error": {"message": "not an HTTP/1.x request, at: %r"
                         % path[:200], "type": "invalid_request_error"}}, close)
        p = path.split("?")[0].rstrip("/")
        if method == "GET" and p in ("/health", "/v1/health", ""):
            return whole(b"200 OK", {"ok": True}, close)
        if method == "GET" and p in ("/v1/models", "/models"):
            return whole(b"200 OK", {"object": "list", "data": [
                {"id": "mock-model", "object": "model", "created": 0, "owned_by": "mock"}]}, close)
        if method != "POST" or not p.endswith("/chat/completions"):
            return whole(b"404 Not Found", {"error": {"message": "--one-write serves POST "
                         "/v1/chat/completions, GET /v1/models and GET /health only, not %s %s" % (method, p),
                         "type": "not_found"}}, close)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        if log is not None:
            log.write(json.dumps({"ts": time.time(), "path": p, "body": body}) + "\n")
            log.flush()
        kind, what = reply(body, rules, default_text)
        if kind == "json":
            return whole(b"200 OK", what, close)
        out = [head(b"200 OK", b"text/event-stream", b"Cache-Control: no-cache\r\n"
                    b"Transfer-Encoding: chunked\r\n", close)]
        for event in what:
            data = ("data: " + (event if isinstance(event, str) else json.dumps(event)) + "\n\n").encode()
            out.append(b"%x\r\n%s\r\n" % (len(data), data))
        out.append(b"0\r\n\r\n")
        return b"".join(out)
    return answer


def serve_one_write(port, rules, default_text, log_path, timing_path):
    log = open(log_path, "a", encoding="utf-8") if log_path else None
    timing = open(timing_path, "a", encoding="utf-8") if timing_path else None
    answer = one_write_answer(rules, default_text, log)

    async def run():
        server = await asyncio.get_running_loop().create_server(
            lambda: OneWrite(answer, timing), "127.0.0.1", port, backlog=256)
        print(f"tool_mock (one write) listening on http://127.0.0.1:{port}/v1", flush=True)
        await server.serve_forever()
    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kit", required=True, help="the bench kit folder (holds mock_llm.py)")
    ap.add_argument("--port", type=int, default=18998)
    ap.add_argument("--rule", action="append", default=[], metavar="NEEDLE=>TEXT")
    ap.add_argument("--log", default=None)
    ap.add_argument("--timing", default=None)
    ap.add_argument("--keep-alive", action="store_true")
    ap.add_argument("--one-write", action="store_true")
    args = ap.parse_args()
    rules = []
    for r in args.rule:
        if "=>" not in r:
            sys.exit(f"tool_mock: a rule is NEEDLE=>TEXT, got {r!r}")
        needle, text = r.split("=>", 1)
        rules.append((needle, text.replace("\\n", "\n")))

    if args.one_write:
        return serve_one_write(args.port, rules, DEFAULT_TEXT, args.log, args.timing)
    sys.path.insert(0, os.path.abspath(args.kit))
    import mock_llm  # the kit's mock: its handler, SSE helpers and server class

    mock_llm.ARGS = argparse.Namespace(host="127.0.0.1", port=args.port, model="mock-model",
                                       text=DEFAULT_TEXT, delay_ms=0,
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
            kind, what = reply(body, rules, mock_llm.ARGS.text)
            if kind == "json":
                return self._json(200, what)
            self._sse_start()
            for event in what:
                self._sse(event)

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
