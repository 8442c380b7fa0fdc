#!/usr/bin/env python3
"""A warm turn on the Anthropic Messages format (`api: "anthropic-messages"`), for builds side
by side: a real `switchboard gateway` on a temp state dir, its model an instant mock of the
Messages API on loopback that streams one fixed text reply (its own connection kept, as the
API's is), driven over the kit's WebSocket client (`chat.send` and `agent.wait` in one session,
so its window fills up to its bound and every call sends it again).

Two measures:
  --callgrind N: the gateway under callgrind for N and for N/5 turns; the difference over the
                 4N/5 turns in between is its instructions a turn (repeatable on a noisy
                 machine). The window reaches its bound (200 messages) at turn 100, so take N of
                 500 or more for turns on a full window only;
  default:       CPU from /proc (user + system) over --turns turns after 250 to warm up, rounds
                 interleaved between the builds, with the load average.
One JSON line per build and round.

  bench/anthropic_turn.py --bin head=target/profiling/switchboard [--bin base=/tmp/old]
                          [--rounds 2] [--turns 1500] [--callgrind 250] [--pieces 40]
                          [--keep DIR]
--pieces K streams the reply's text in K deltas (default one); --keep DIR keeps callgrind's
outputs there (NAME-ROUND-TURNS.out), for a function's own count.
"""
import argparse
import json
import os
import socket
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_gateway import LocalGateway  # noqa: E402

def reply(pieces):
    """The streamed reply's events: its text in `pieces` deltas (one, the text whole, by default)."""
    text = "This is a mock reply from the model."
    deltas = [text] if pieces <= 1 else ["piece %d of the reply " % i for i in range(pieces)]
    middle = [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": d}}) for d in deltas]
    return REPLY[:2] + middle + REPLY[3:]


REPLY = [
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "mock-model",
        "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0,
                             "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": "This is a mock reply from the model."}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                       "usage": {"output_tokens": 9}}),
    ("message_stop", {"type": "message_stop"}),
]


def body(events):
    return b"".join(b"event: %s\ndata: %s\n\n" % (name.encode(), json.dumps(data).encode()) for name, data in events)


BODY = body(REPLY)


class Messages(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if not request.get("messages") or request["messages"][-1].get("role") != "user":
            self.send_response(400)  # a malformed request must not count as a fast turn
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


def config(port):
    return ('models: { providers: { mock: { api: "anthropic-messages", apiKey: "k", '
            'baseUrl: "http://127.0.0.1:%d", models: [{ id: "mock-model" }] } } }, '
            'agents: { defaults: { model: "mock/mock-model" } },' % port)


def cpu_us(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1e6 / os.sysconf("SC_CLK_TCK")


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def instructions(binary, kit, port, turns, keep=None):
    out = keep or tempfile.NamedTemporaryFile(prefix="sb-anthropic-cg-", delete=False).name
    wrapper = ("valgrind", "--tool=callgrind", "--callgrind-out-file=" + out)
    with LocalGateway(binary, kit, prefix="sb-anthropic-", config=config(port), wrapper=wrapper) as gw:
        for _ in range(turns):
            gw.turn("hi")
    with open(out) as f:
        total = next(int(line.split()[1]) for line in f if line.startswith("summary:"))
    if not keep:
        os.unlink(out)
    return total


def cpu(binary, kit, port, turns):
    with LocalGateway(binary, kit, prefix="sb-anthropic-", config=config(port)) as gw:
        for _ in range(250):
            gw.turn("hi")
        before, c0, t0 = load(), cpu_us(gw.proc.pid), time.time()
        for _ in range(turns):
            gw.turn("hi")
        c1, t1 = cpu_us(gw.proc.pid), time.time()
        return {"cpuUsPerTurn": round((c1 - c0) / turns), "wallUsPerTurn": round((t1 - t0) * 1e6 / turns),
                "loadBefore": before, "loadAfter": load()}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser()
    p.add_argument("--bin", action="append", required=True, help="NAME=PATH")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--turns", type=int, default=1500)
    p.add_argument("--callgrind", type=int, default=0)
    p.add_argument("--pieces", type=int, default=1, help="text deltas a reply (default 1)")
    p.add_argument("--keep", help="a directory to keep the callgrind outputs in")
    p.add_argument("--kit", default=os.path.join(here, "..", "..", "shared", "bench"))
    args = p.parse_args()
    global BODY
    BODY = body(reply(args.pieces))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Messages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    builds = [b.split("=", 1) for b in args.bin]
    for round_ in range(1, args.rounds + 1):
        for name, binary in builds:
            if args.callgrind:
                keep = lambda n: args.keep and os.path.join(args.keep, "%s-%d-%d.out" % (name, round_, n))
                many = instructions(binary, args.kit, port, args.callgrind, keep(args.callgrind))
                few = instructions(binary, args.kit, port, args.callgrind // 5, keep(args.callgrind // 5))
                line = {"instructionsPerTurn": round((many - few) / (args.callgrind - args.callgrind // 5))}
            else:
                line = cpu(binary, args.kit, port, args.turns)
            line.update(bench="anthropic_turn", build=name, round=round_, pieces=args.pieces)
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
