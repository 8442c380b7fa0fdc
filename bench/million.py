#!/usr/bin/env python3
"""Stores of different sizes side by side (issue 59 point 6: a million sessions against 10k),
measured the way `compare.sh` measures two gateways: in interleaved rounds, with the gateway not
being measured held still (SIGSTOP), so that a slow moment of the host lands on both sizes alike.
Each store is seeded beforehand with `switchboard dev seed --sessions N --messages-per-session 4`;
the model is `builtin/echo`. Each store is first started once and left until its gateway is
idle (a store fresh from its seed has no clean stop's record, so that start checks every mirror
file), then stopped cleanly. In each round:

  readyMs        spawn → hello-ok + `health` (bench/launch.py), --starts starts of each store
                 in alternating order, each stopped cleanly; the round gives their median
  idleRssMiB     both gateways up; RSS --idle-s seconds after ready (startCpuMsPerS: the CPU in
                 those seconds, the start's background work)
  list           `sessions.list {limit:200}`: the first answer's time, then p50 and gateway CPU a
                 call (the page kept after the first)
  history        `chat.history {limit:50}` of the seeded session bench-000000: p50 and CPU a call
  listAfterWrite a turn (`chat.send` + `agent.wait`) in a random seeded session, with and without
                 the page after it: CPU a pair minus CPU a turn alone (the page brought up to date)

The calls run in --batches short batches of --calls calls a store, the stores alternating (the
first store first in even batches, last in odd ones), each gateway resumed for its own batch only.
The gateway's CPU is its utime + stime from /proc (10 ms ticks), summed over its batches. Each
line gives the load average and the share of the machine's CPU the host stole for other guests
(stealPct); the round's last line gives each figure's ratio between the last store and the first.

  million.py --bin target/profiling/switchboard --store 10k=/tmp/s10k --store 1m=/tmp/s1m
             [--rounds 3] [--starts 5] [--batches 10] [--calls 100] [--idle-s 15]
"""
import argparse
import json
import os
import random
import signal
import statistics
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
    os.kill(pid, signal.SIGCONT)
    os.kill(pid, signal.SIGTERM)
    while os.path.exists("/proc/%d" % pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except OSError:
            break
        time.sleep(0.05)


def cpu_total(pid):
    user, system = cpu_us(pid)
    return user + system


def cpu_ticks():
    """The machine's (steal, total) CPU ticks from /proc/stat: time the host gave to others."""
    with open("/proc/stat") as f:
        ticks = [int(t) for t in f.readline().split()[1:]]
    return ticks[7], sum(ticks)


class Store:
    """One store's gateway and what its batches measured in a round."""

    def __init__(self, name, home):
        sizes = {"k": 1_000, "m": 1_000_000}
        self.name, self.home = name, home
        self.sessions = int(name[:-1]) * sizes[name[-1]]
        self.rng = random.Random(11)
        self.ready = []
        self.lat = {"list": [], "history": []}
        self.cpu = {"list": 0, "history": 0, "alone": 0, "pair": 0}

    def up(self, args):
        self.pid, ready_ms, self.url = start(args, self.home)
        return ready_ms

    def connect(self):
        from gw_client import Gw
        self.gw = Gw(self.url, TOKEN, timeout=120)

    def timed(self, method, params):
        t0 = time.perf_counter()
        self.gw.call(method, params)
        return (time.perf_counter() - t0) * 1000

    def turn(self):
        key = "agent:main:bench-%06d" % self.rng.randrange(self.sessions)
        sent = self.gw.call("chat.send", {"sessionKey": key, "message": "hi"})
        self.gw.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 60000})

    def batch(self, n):
        """n calls of each kind, the gateway resumed for them only."""
        page, hist = {"limit": 200}, {"sessionKey": "agent:main:bench-000000", "limit": 50}
        os.kill(self.pid, signal.SIGCONT)
        try:
            for kind, method, params in (("list", "sessions.list", page), ("history", "chat.history", hist)):
                c0 = cpu_total(self.pid)
                self.lat[kind] += [self.timed(method, params) for _ in range(n)]
                self.cpu[kind] += cpu_total(self.pid) - c0
            for kind in ("alone", "pair"):
                c0 = cpu_total(self.pid)
                for _ in range(n):
                    self.turn()
                    if kind == "pair":
                        self.gw.call("sessions.list", page)
                self.cpu[kind] += cpu_total(self.pid) - c0
        finally:
            os.kill(self.pid, signal.SIGSTOP)

    def figures(self, calls):
        p50 = lambda xs: round(statistics.median(xs), 3)
        return {"readyMs": round(statistics.median(self.ready), 1), "readyAllMs": self.ready,
                "idleRssMiB": self.rss, "startCpuMsPerS": self.start_cpu, "listFirstMs": self.list_first,
                "list": {"p50Ms": p50(self.lat["list"]), "cpuUs": round(self.cpu["list"] / calls, 1)},
                "history": {"p50Ms": p50(self.lat["history"]), "cpuUs": round(self.cpu["history"] / calls, 1)},
                "listAfterWrite": {"cpuUs": round((self.cpu["pair"] - self.cpu["alone"]) / calls, 1),
                                   "turnCpuUs": round(self.cpu["alone"] / calls, 1)}}


def prime(args, name, home):
    """A first start that stays up until the gateway is idle, then stops cleanly: a store fresh
    from its seed has no clean stop's record yet, so its first gateway checks every mirror file
    in the background (a minute at a million), which the rounds must not measure."""
    pid, ready_ms, _ = start(args, home)
    t0, quiet = time.monotonic(), 0
    while quiet < 3 and time.monotonic() - t0 < 600:
        c0 = cpu_total(pid)
        time.sleep(1)
        quiet = quiet + 1 if cpu_total(pid) - c0 <= 10_000 else 0
    stop(pid)
    print(json.dumps({"bench": "million", "prime": name, "readyMs": ready_ms,
                      "busyS": round(time.monotonic() - t0 - 3, 1)}), flush=True)


def round_of(args, stores):
    """One round: the starts, then both gateways up and measured in alternating batches."""
    for s in range(args.starts):
        for st in (stores if s % 2 == 0 else stores[::-1]):
            st.ready.append(st.up(args))
            stop(st.pid)
    for st in stores:
        st.up(args)
    cpu0 = [cpu_total(st.pid) for st in stores]
    time.sleep(args.idle_s)
    for st, c0 in zip(stores, cpu0):
        st.start_cpu = round((cpu_total(st.pid) - c0) / 1000 / args.idle_s, 1)
        st.rss = round(rss_kb(st.pid) / 1024, 1)
        st.connect()
        st.list_first = round(st.timed("sessions.list", {"limit": 200}), 2)
        for _ in range(args.calls):  # the turns' warm-up: the model path and the kept page's update
            st.turn()
            st.gw.call("sessions.list", {"limit": 200})
        os.kill(st.pid, signal.SIGSTOP)
    try:
        for b in range(args.batches):
            for st in (stores if b % 2 == 0 else stores[::-1]):
                st.batch(args.calls)
    finally:
        for st in stores:
            st.gw.close()
            stop(st.pid)
    return [st.figures(args.calls * args.batches) for st in stores]


def ratios(first, last):
    pick = {"readyMs": lambda f: f["readyMs"], "idleRssMiB": lambda f: f["idleRssMiB"],
            "listP50": lambda f: f["list"]["p50Ms"], "listCpu": lambda f: f["list"]["cpuUs"],
            "historyP50": lambda f: f["history"]["p50Ms"], "historyCpu": lambda f: f["history"]["cpuUs"]}
    return {k: round(get(last) / get(first), 2) if get(first) else None for k, get in pick.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--kit", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench"))
    ap.add_argument("--store", action="append", required=True, help="NAME=STATE-DIR (NAME ends in its size: 10k, 1m)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--calls", type=int, default=100, help="calls of each kind in a batch")
    ap.add_argument("--idle-s", type=float, default=15)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.kit, "client"))
    # A fresh seed leaves gigabytes to write back; the kernel's writeback would run under the
    # first rounds' calls.
    os.sync()
    for pair in args.store:
        prime(args, *pair.split("=", 1))
    for r in range(1, args.rounds + 1):
        stores = [Store(*pair.split("=", 1)) for pair in args.store]
        load0, (steal0, total0) = load(), cpu_ticks()
        figures = round_of(args, stores)
        steal1, total1 = cpu_ticks()
        steal = round(100 * (steal1 - steal0) / max(1, total1 - total0), 1)
        for st, f in zip(stores, figures):
            print(json.dumps({"bench": "million", "round": r, "store": st.name, **f}), flush=True)
        print(json.dumps({"bench": "million", "round": r, "ratio": "%s/%s" % (stores[-1].name, stores[0].name),
                          **ratios(figures[0], figures[-1]), "loadBefore": load0, "loadAfter": load(),
                          "stealPct": steal}), flush=True)


if __name__ == "__main__":
    main()
