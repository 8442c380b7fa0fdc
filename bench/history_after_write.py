#!/usr/bin/env python3
"""`chat.history` of a short transcript right after a write (docs/decisions.md, "A short
transcript's page is a point read"), for several builds in alternated rounds. For each build and
round, a real `switchboard gateway` on a temp state dir (SQLite, default config), driven by the
bench kit's client over loopback: 50 sessions warm up, then --n times a `chat.inject` into one of
300 sessions and at once `chat.history {limit:200}` of it (its transcript a few messages long,
so every page is read from the store: the write moved the kept page's version). Prints, per
build and round, the history call's p50 at the client and the gateway's CPU per inject + history
(utime + stime from /proc) and its voluntary context switches (summed over its threads), with
the machine's load. Loopback only.

  bench/history_after_write.py --bin before=/tmp/old --bin after=target/profiling/switchboard
                               [--rounds 3] [--n 1500]
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_gateway import LocalGateway, builds_args  # noqa: E402
from turn_kernel import cpu_us, switches  # noqa: E402


def measure(name, binary, args, round_no):
    with LocalGateway(binary, args.kit, prefix="sb-hist-") as local:
        gw = local.gw
        for i in range(50):
            gw.call("chat.inject", {"sessionKey": "agent:main:w%d" % i, "message": "warm"})
            gw.call("chat.history", {"sessionKey": "agent:main:w%d" % i, "limit": 200})
        time.sleep(1.5)
        load_before, latencies = os.getloadavg()[0], []
        cpu0, switches0 = sum(cpu_us(local.proc.pid)), switches(local.proc.pid)[0]
        for i in range(args.n):
            key = "agent:main:s%d" % (i % 300)
            gw.call("chat.inject", {"sessionKey": key, "message": "m%d" % i})
            t0 = time.perf_counter()
            page = gw.call("chat.history", {"sessionKey": key, "limit": 200})
            latencies.append((time.perf_counter() - t0) * 1e6)
        cpu1, switches1 = sum(cpu_us(local.proc.pid)), switches(local.proc.pid)[0]
        print(json.dumps({
            "bench": "history_after_write", "build": name, "round": round_no, "n": args.n,
            "messagesInLastPage": len(page.get("messages") or []),
            "historyP50Us": round(statistics.median(latencies)),
            "cpuUsPerInjectAndHistory": round((cpu1 - cpu0) / args.n),
            "voluntarySwitchesPerInjectAndHistory": round((switches1 - switches0) / args.n, 2),
            "loadBefore": round(load_before, 2), "loadAfter": round(os.getloadavg()[0], 2),
        }), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    builds_args(ap)
    ap.add_argument("--n", type=int, default=1500)
    args = ap.parse_args()
    args.kit = os.path.abspath(args.kit)
    builds = [b.split("=", 1) for b in args.bin]
    for round_no in range(1, args.rounds + 1):
        for name, binary in builds:
            measure(name, binary, args, round_no)


if __name__ == "__main__":
    main()
