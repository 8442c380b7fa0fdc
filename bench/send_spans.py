#!/usr/bin/env python3
"""Where a `sessions_send` with a wait spends its wall time (issue 59 point 2), from the
gateway's own OTLP spans: one gateway per build on a new store, the model bench/tool_mock.py
(keeping its connections, --timing), traces exported to a receiver in this script; each round
runs bench/agent_load.py's send workload over the kit's client. Per sample, the timed turn's
window is cut at the ends of its spans: the caller's `chat.send` (answered), its run, its three
model calls, the `sessions_send` tool, the target's run. Prints, per build and round, one JSON
line with each segment's median (µs) and, per model call, the mock's own time beside the
gateway's span. The floor beside it: the gateway's own request bodies (captured first, over
three samples of the first build, with the mock's --log) sent again to a new mock, one after
another over one kept connection, by a raw-socket client in this script that reads each streamed
reply to its end: what a model call costs a client that does nothing else (`floorUsP50`). Rounds alternate the builds. Tracing every span costs the gateway some time of
its own: compare builds with each other, not with untraced runs. Loopback only.

Needs the OTLP protobuf classes from PyPI (`pip install opentelemetry-proto`).

  bench/send_spans.py --bin before=/path/to/switchboard --bin after=/other [--n 30] [--rounds 2]
                      [--mock keep-alive|one-write]
"""
import argparse
import collections
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_gateway import LocalGateway, mock_config, send_args, send_load, tool_mock  # noqa: E402


try:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
except ImportError:
    sys.exit("send_spans.py needs the OTLP protobuf classes: pip install opentelemetry-proto")

# The window's points, in the order a send passes them; each segment runs from one to the next.
POINTS = ["chat.send in", "chat.send answered", "caller run starts", "model 1 starts",
          "model 1 ends", "tool starts", "target run starts", "model 2 starts", "model 2 ends",
          "target run ends", "tool ends", "model 3 starts", "model 3 ends", "caller run ends"]


class Spans:
    """An OTLP/HTTP receiver on loopback that keeps every span it is sent."""

    def __init__(self):
        self.spans, self.lock = [], threading.Lock()
        spans = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                with spans.lock:
                    for resource in request.resource_spans:
                        for scope in resource.scope_spans:
                            spans.spans.extend(
                                {"name": s.name, "trace": s.trace_id.hex(),
                                 "t0": s.start_time_unix_nano, "t1": s.end_time_unix_nano}
                                for s in scope.spans)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self):
        with self.lock:
            spans, self.spans = self.spans, []
        return spans


def points(trace):
    """The window's points (ns) of one sample's trace, or None when a span is missing."""
    named = lambda prefix: sorted((s for s in trace if s["name"].startswith(prefix)), key=lambda s: s["t0"])
    sends, runs, tools = named("ws chat.send"), named("invoke_agent"), named("execute_tool")
    if not (sends and len(runs) >= 2 and tools):
        return None
    caller, target, tool = runs[0], runs[1], tools[0]
    models = [s for s in named("chat ") if s["t0"] < caller["t1"]]
    if len(models) != 3:
        return None
    m1, m2, m3 = models
    return [sends[0]["t0"], sends[0]["t1"], caller["t0"], m1["t0"], m1["t1"], tool["t0"],
            target["t0"], m2["t0"], m2["t1"], target["t1"], tool["t1"], m3["t0"], m3["t1"],
            caller["t1"]]


def median(values):
    values = sorted(values)
    return round(values[len(values) // 2]) if values else None


def start_mock(args, timing, log=None):
    """tool_mock.py keeping its connections (`--mock`: each event written apart, or each answer
    in one write) and logging its calls' times: (process, port)."""
    return tool_mock(args.kit, "--" + args.mock, "--timing", timing, *(["--log", log] if log else []))


def read_calls(timing):
    with open(timing, encoding="utf-8") as f:
        return sorted((c["t0"], c["t1"]) for c in map(json.loads, f) if c)


def bodies_of(log):
    """The chat completions' request bodies the mock logged."""
    bodies = []
    with open(log, encoding="utf-8") as f:
        for line in f:
            entry = json.loads(line)
            if entry.get("path", "").endswith("/chat/completions") and entry.get("body"):
                bodies.append(json.dumps(entry["body"]).encode())
    return bodies


def floor(args, bodies):
    """`bodies` sent again to a new mock over one kept connection: per call, the client's time
    from its first byte sent to the reply's last byte read, and the mock's own."""
    timing = tempfile.NamedTemporaryFile(prefix="sb-floor-", suffix=".jsonl", delete=False).name
    mock, port = start_mock(args, timing)
    took = []
    try:
        conn = socket.create_connection(("127.0.0.1", port))
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for body in bodies:
            head = ("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                    "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (port, len(body)))
            t0 = time.time()
            conn.sendall(head.encode() + body)
            reply = b""
            while not reply.endswith(b"0\r\n\r\n"):
                chunk = conn.recv(65536)
                if not chunk:
                    raise RuntimeError("the mock closed a kept connection")
                reply += chunk
            took.append((t0, time.time()))
        conn.close()
        time.sleep(0.2)
        own = read_calls(timing)
    finally:
        mock.terminate()
        mock.wait()
        os.unlink(timing)
    pairs = [(b - a, o1 - o0, o0 - a, b - o1) for (a, b), (o0, o1) in zip(took, own)]
    names = ["client", "mock's own", "sent -> mock start", "mock end -> read"]
    return {name: median([p[i] * 1e6 for p in pairs]) for i, name in enumerate(names)}


def one_round(args, name, binary, spans, n, log=None):
    timing = tempfile.NamedTemporaryFile(prefix="sb-spans-", suffix=".jsonl", delete=False).name
    mock, port = start_mock(args, timing, log)
    config = (mock_config(port) + ' observability: { otlp: { endpoint: "http://127.0.0.1:%d", sampleRatio: 1 } },'
              % spans.port)
    try:
        with LocalGateway(binary, args.kit, prefix="sb-spans-", config=config) as gw:
            spans.take()
            out = subprocess.run(send_load(args.kit, gw, n, args.settle_s),
                                 capture_output=True, text=True, check=False)
            if out.returncode != 0 and not out.stdout:
                raise RuntimeError("agent_load.py failed: %s" % out.stderr[-2000:])
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # the exporter sends in batches, every few seconds
                with spans.lock:
                    done = sum(s["name"].startswith("execute_tool") for s in spans.spans) >= n
                if done:
                    break
                time.sleep(0.5)
            time.sleep(1)
        mock_calls = read_calls(timing)
    finally:
        mock.terminate()
        mock.wait()
        os.unlink(timing)
    return summary(name, spans.take(), mock_calls, n)


def summary(name, spans, mock_calls, n):
    traces = collections.defaultdict(list)
    for s in spans:
        traces[s["trace"]].append(s)
    segments = collections.defaultdict(list)
    model_calls = collections.defaultdict(list)
    samples = 0
    for trace in traces.values():
        p = points(trace)
        if p is None:
            continue
        samples += 1
        for a, b, t0, t1 in zip(POINTS, POINTS[1:], p, p[1:]):
            segments["%s -> %s" % (a, b)].append((t1 - t0) / 1e3)
        segments["window"].append((p[-1] - p[0]) / 1e3)
        for s in (x for x in trace if x["name"].startswith("chat ")):
            t0, t1 = s["t0"] / 1e9, s["t1"] / 1e9
            own = min(mock_calls, key=lambda c: abs(c[0] - t0), default=None)
            if own is None or abs(own[0] - t0) > 0.05:
                continue
            model_calls["span"].append((t1 - t0) * 1e6)
            model_calls["mock's own"].append((own[1] - own[0]) * 1e6)
            model_calls["span start -> mock start"].append((own[0] - t0) * 1e6)
            model_calls["mock end -> span end"].append((t1 - own[1]) * 1e6)
    return {"build": name, "samples": samples, "of": n,
            "segmentsUsP50": {k: median(v) for k, v in segments.items()},
            "modelCallUsP50": {k: median(v) for k, v in model_calls.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, help="NAME=PATH (repeat for each build)")
    ap.add_argument("--mock", choices=["keep-alive", "one-write"], default="keep-alive",
                    help="how the mock writes an answer: each event apart, or all in one write")
    args = send_args(ap, n=30, rounds=2)
    builds = [b.split("=", 1) if "=" in b else (b, b) for b in args.bin]
    spans = Spans()
    log = tempfile.NamedTemporaryFile(prefix="sb-spans-log-", suffix=".jsonl", delete=False).name
    try:
        one_round(args, builds[0][0], builds[0][1], spans, 3, log)
        bodies = bodies_of(log)
    finally:
        os.unlink(log)
    for r in range(args.rounds):
        for name, binary in builds:
            result = one_round(args, name, binary, spans, args.n)
            result["floorUsP50"] = floor(args, bodies)
            result["round"] = r + 1
            with open("/proc/loadavg") as f:
                result["load"] = float(f.read().split()[0])
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
