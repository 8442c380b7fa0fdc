#!/usr/bin/env python3
"""Memory after large messages: a real `switchboard gateway` on a temp state dir (the embedded
defaults: the scripted model, whose default reply quotes the user's text), N chat.send messages of
SIZE bytes into one session, each waited for, over one WebSocket (the bench kit's client). Prints
VmRSS (/proc/<pid>/status) after a warm-up turn, after the messages, and a few seconds later,
as one JSON line.

  large_messages.py --bin target/release/switchboard [--kit ../shared/bench] [--n 100]
                    [--size 1000000] [--rounds 1]

--rounds R sends the N messages R times (RSS read after each round), which tells a bounded
cache (flat after the first round) from a leak (growing each round). A message is one word (no
whitespace) unless --words: a model streams a reply word by word, and each streamed piece carries
the whole text so far (see docs/decisions.md, "Memory after large messages").
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--kit", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench"))
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--settle-s", type=float, default=5.0)
    ap.add_argument("--words", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.kit, "client"))
    from gw_client import Gw  # noqa: E402

    home = tempfile.mkdtemp(prefix="sb-large-")
    port = free_port()
    with open(os.path.join(home, "config.json5"), "w") as f:
        f.write("{ gateway: { port: %d } }\n" % port)
    log = open(os.path.join(home, "gateway.log"), "w")
    gw_proc = subprocess.Popen([args.bin, "--state-dir", home, "gateway"], stdout=log, stderr=log)
    try:
        token_path = os.path.join(home, "gateway-token")
        deadline = time.monotonic() + 60
        gw = None
        while gw is None:
            try:
                with open(token_path) as f:
                    token = f.read().strip()
                gw = Gw("ws://127.0.0.1:%d" % port, token, timeout=120)
            except (OSError, ValueError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

        def turn(message):
            sent = gw.call("chat.send", {"sessionKey": "agent:main:large", "message": message})
            done = gw.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 120000}, timeout_ms=130000)
            if done.get("status") != "ok":
                raise RuntimeError("run ended %s" % json.dumps(done)[:300])

        turn("warm up")
        time.sleep(1)
        out = {"n": args.n, "size": args.size, "rssKbBefore": rss_kb(gw_proc.pid), "rounds": []}
        word = "lorem ipsum dolor sit amet " if args.words else "loremipsumdolorsitamet"
        for r in range(args.rounds):
            for i in range(args.n):
                head = "message %d.%d " % (r, i)
                body = (word * (args.size // len(word) + 1))[: args.size - len(head)]
                turn(head + body)
            out["rounds"].append(rss_kb(gw_proc.pid))
        time.sleep(args.settle_s)
        out["rssKbSettled"] = rss_kb(gw_proc.pid)
        gw.close()
        print(json.dumps(out))
    finally:
        gw_proc.terminate()
        gw_proc.wait(timeout=60)
        log.close()
        shutil.rmtree(home, ignore_errors=True)  # about 1 GB of transcripts a run


if __name__ == "__main__":
    main()
