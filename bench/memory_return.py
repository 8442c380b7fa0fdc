#!/usr/bin/env python3
"""Does memory come back after a burst? (issue 59 point 4). A real `switchboard gateway` on a temp
state dir and the embedded defaults (the scripted model quotes the user's text), driven by the
bench kit's client over loopback:

1. idle: one warm-up turn, then VmRSS after --settle-s;
2. large messages: --n chat.send messages of --size bytes into one session, each waited for;
3. connections: --sockets WebSockets opened (each through `connect`) and held at once, then all
   closed;

after each burst VmRSS (/proc/<pid>/status) is read every second for --watch-s seconds. Prints
one JSON line: the idle figure, each burst's peak, its figure at the end of the watch, the first
second at which it was within 1.5x of idle (null when never), and the ratio at the end.

  memory_return.py --bin target/profiling/switchboard [--kit ../shared/bench] [--n 100]
                   [--size 1000000] [--sockets 2000] [--watch-s 30] [--env NAME=VALUE ...]
"""
import argparse
import json
import os
import time

from local_gateway import LocalGateway, bench_args, rss_kb


def rss_parts(pid):
    """VmRSS split: anonymous (the heap) and file-backed (mostly the binary's own code)."""
    parts = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssFile:")):
                parts[line.split(":")[0]] = int(line.split()[1])
    return parts


def watch(pid, idle, seconds):
    """VmRSS every second for `seconds`: the samples and the first second within 1.5x of idle."""
    samples, back = [], None
    for second in range(seconds + 1):
        kb = rss_kb(pid)
        samples.append(kb)
        if back is None and kb <= 1.5 * idle:
            back = second
        if second < seconds:
            time.sleep(1)
    return samples, back


def mappings(pid, top=6):
    """The mappings holding the most RSS (kB), from /proc/<pid>/smaps: where memory stays."""
    found, name = [], None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                name = "%s %s" % (head[0], head[5] if len(head) > 5 else "[anon]")
            elif head[0] == "Rss:":
                found.append((int(head[1]), name))
    return sorted(found, reverse=True)[:top]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bench_args(ap)
    ap.add_argument("--sockets", type=int, default=2000)
    ap.add_argument("--watch-s", type=int, default=30)
    ap.add_argument("--settle-s", type=float, default=3.0)
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the gateway")
    ap.add_argument("--reconnect", action="store_true", help="close the messages' WebSocket after them")
    ap.add_argument("--smaps", action="store_true", help="add the largest mappings after each watch")
    ap.add_argument("--keep-log", help="copy the gateway's log here")
    args = ap.parse_args()
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in args.env)
    with LocalGateway(args.bin, args.kit, prefix="sb-memory-", env=env, keep_log=args.keep_log) as local:
        run(args, local)


def run(args, local):
    """The two bursts over `local`, printed as one JSON line."""
    proc, turn = local.proc, local.turn
    turn("warm up")
    time.sleep(args.settle_s)
    idle = rss_kb(proc.pid)
    out = {"env": args.env, "idleKb": idle, "idleParts": rss_parts(proc.pid)}

    def after(name, peak, **facts):
        samples, back = watch(proc.pid, idle, args.watch_s)
        out[name] = dict(facts, peakKb=peak, endKb=samples[-1], withinAfterS=back,
                         ratio=round(samples[-1] / idle, 2), endParts=rss_parts(proc.pid))
        if args.smaps:
            out[name]["mappings"] = mappings(proc.pid)

    word = "loremipsumdolorsitamet"
    for i in range(args.n):
        head = "message %d " % i
        turn(head + (word * (args.size // len(word) + 1))[: args.size - len(head)])
    peak = rss_kb(proc.pid)
    if args.reconnect:
        local.gw.close()
        local.gw = local.connect()
    after("messages", peak, n=args.n, size=args.size)

    held = [local.connect() for _ in range(args.sockets)]
    peak = rss_kb(proc.pid)
    for ws in held:
        ws.close()
    del held
    after("sockets", peak, n=args.sockets)
    local.gw.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
