#!/usr/bin/env python3
"""Stores of different sizes side by side (issue 59 point 6: a million sessions against 10k): for
each store (seeded beforehand with `switchboard dev seed --sessions N --messages-per-session 4`),
in interleaved rounds, a real gateway (model `builtin/echo`) is started on it and measured:

  readyMs        spawn → hello-ok + `health` (bench/launch.py)
  idleRssMiB     RSS --idle-s seconds after ready; the calls start --settle-s seconds later
  list           `sessions.list {limit:200}`: the first answer's time, then p50 and gateway CPU a
                 call over --calls calls (the kit's client; the page kept after the first)
  listAfterWrite a turn (`chat.send` + `agent.wait`) in a seeded session, then the page, --calls
                 times: CPU a pair minus CPU a turn alone (the page brought up to date)
  history        `chat.history {limit:50}` of the seeded session bench-000000: p50 and CPU a call

The gateway's CPU is its utime + stime from /proc (10 ms ticks). Each line gives the load average,
the gateway's CPU in the --idle-s seconds after ready (startCpuMsPerS: the start's background
work) and while idle just before the calls (idleCpuMsPerS: a sweep still running would show
there), and the share of the machine's CPU time the host stole for other guests (stealPct).

  million.py --bin target/profiling/switchboard --store 10k=/tmp/s10k --store 1m=/tmp/s1m
             [--rounds 3] [--calls 1000] [--idle-s 15] [--settle-s 75]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

from local_gateway import free_port, rss_kb
from turn_kernel import cpu_us, load

TOKEN = "bench-token-0123456789"


def start(args, home):
    """The gateway on `home`: (process id, ready ms, url)."""
    port = free_port()
    config = os.path.join(home, "bench-config.json5")
    with open(config, "w") as f:
        f.write('{ agents: { defaults: { model: "builtin/echo" } }, gateway: { auth: { token: "%s" } } }\n' % TOKEN)
    out = subprocess.check_output([sys.executable, os.path.join(os.path.dirname(__file__), "launch.py"),
                                   "--kit", args.kit, "--port", str(port), "--token", TOKEN,
                                   "--out", os.path.join(home, "gw.out"), "--err", os.path.join(home, "gw.err"),
                                   "--timeout-s", "300", "--", args.bin, "--state-dir", home, "--config", config,
                                   "gateway", "--port", str(port)])
    started = json.loads(out)
    return started["pid"], started["readyMs"], "ws://127.0.0.1:%d" % port


def stop(pid):
    os.kill(pid, 15)
    while os.path.exists("/proc/%d" % pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except OSError:
            break
        time.sleep(0.05)


def calls(args, url, method, params, n):
    client = os.path.join(args.kit, "client", "gw_client.py")
    return json.loads(subprocess.check_output([sys.executable, client, "--url", url, "--token", TOKEN, "call",
                                               method, json.dumps(params), "--repeat", str(n)]))


def cpu_of(pid, work):
    u0, s0 = cpu_us(pid)
    result = work()
    u1, s1 = cpu_us(pid)
    return u1 - u0 + s1 - s0, result


def cpu_ticks():
    """The machine's (steal, total) CPU ticks from /proc/stat: time the host gave to others."""
    with open("/proc/stat") as f:
        ticks = [int(t) for t in f.readline().split()[1:]]
    return ticks[7], sum(ticks)


def measure(args, name, home, sessions):
    out = {"bench": "million", "store": name, "loadBefore": load()}
    steal0, total0 = cpu_ticks()
    pid, ready_ms, url = start(args, home)
    try:
        out["readyMs"] = ready_ms
        # The start's background work (the mirror sweep, unless the last clean stop vouched).
        start_cpu, _ = cpu_of(pid, lambda: time.sleep(args.idle_s))
        out["startCpuMsPerS"] = round(start_cpu / 1000 / args.idle_s, 1)
        out["idleRssMiB"] = round(rss_kb(pid) / 1024, 1)
        # Unless the last clean stop vouched for every mirror file, the writer checks each after
        # a start, 1,000 every 50 ms when idle (a minute at a million): the calls come after it.
        time.sleep(max(0.0, args.settle_s - 5))
        # What the gateway spends while nothing calls it, just before the calls: the sweep's
        # share, were it still running (it would land in every figure below).
        idle_cpu, _ = cpu_of(pid, lambda: time.sleep(5))
        out["idleCpuMsPerS"] = round(idle_cpu / 5000, 1)
        page = {"limit": 200}
        first = calls(args, url, "sessions.list", page, 1)
        out["listFirstMs"] = first["latencyMs"]["p50"]
        cpu, res = cpu_of(pid, lambda: calls(args, url, "sessions.list", page, args.calls))
        out["list"] = {"p50Ms": res["latencyMs"]["p50"], "cpuUs": round(cpu / args.calls, 1)}
        hist = {"sessionKey": "agent:main:bench-000000", "limit": 50}
        cpu, res = cpu_of(pid, lambda: calls(args, url, "chat.history", hist, args.calls))
        out["history"] = {"p50Ms": res["latencyMs"]["p50"], "cpuUs": round(cpu / args.calls, 1)}
        sys.path.insert(0, os.path.join(args.kit, "client"))
        from gw_client import Gw
        gw = Gw(url, TOKEN, timeout=120)
        rng = random.Random(11)

        def turn():
            key = "agent:main:bench-%06d" % rng.randrange(sessions)
            sent = gw.call("chat.send", {"sessionKey": key, "message": "hi"})
            gw.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 60000})

        def turns(with_list):
            for _ in range(args.calls):
                turn()
                if with_list:
                    gw.call("sessions.list", page)

        turns(True)  # warm up
        alone, _ = cpu_of(pid, lambda: turns(False))
        pair, _ = cpu_of(pid, lambda: turns(True))
        out["listAfterWrite"] = {"cpuUs": round((pair - alone) / args.calls, 1),
                                 "turnCpuUs": round(alone / args.calls, 1)}
        gw.close()
    finally:
        stop(pid)
    out["loadAfter"] = load()
    steal1, total1 = cpu_ticks()
    out["stealPct"] = round(100 * (steal1 - steal0) / max(1, total1 - total0), 1)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--kit", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench"))
    ap.add_argument("--store", action="append", required=True, help="NAME=STATE-DIR (NAME ends in its size: 10k, 1m)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--idle-s", type=float, default=15)
    ap.add_argument("--settle-s", type=float, default=0, help="seconds after the RSS reading before the calls")
    args = ap.parse_args()
    sizes = {"k": 1_000, "m": 1_000_000}
    # A fresh seed leaves gigabytes to write back; the kernel's writeback would run under the
    # first rounds' calls.
    os.sync()
    for r in range(1, args.rounds + 1):
        for pair in args.store:
            name, home = pair.split("=", 1)
            sessions = int(name[:-1]) * sizes[name[-1]]
            result = measure(args, name, home, sessions)
            result["round"] = r
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
