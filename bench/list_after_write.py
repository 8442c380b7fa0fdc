#!/usr/bin/env python3
"""What `sessions.list {limit:200}` costs the gateway right after a write (issue 59 point 3), at
10k sessions: a real `switchboard gateway` on a store seeded with `dev seed` (4 messages a
session, model `builtin/echo`), driven over one WebSocket by the bench kit's client. Blocks of
--n operations, in interleaved rounds:

  list        the page asked again and again with nothing written (kept)
  turn        a warm turn (`chat.send` + `agent.wait`) on a seeded session picked at random
  turn+list   the turn, then the page (brought up to date from the row the turn wrote)
  turn+whole  the turn, then a page read whole: `activeMinutes` far in the past, a query no
              page is kept for, every row still listed (it also counts the rows it lists)

A list after a write costs (turn+list − turn) / n; read whole, (turn+whole − turn) / n. Three
measures: the gateway's user + system CPU of each block from /proc (a 10 ms tick; the machine's
load average before and after); its threads' context switches (voluntary + not) and its minor
page faults in the same blocks; and, with --callgrind N, its instructions over blocks of N operations under callgrind
(`callgrind_control --dump` after each block). The last two do not depend on the machine or its
load. One JSON line per round and measure.

  list_after_write.py --bin target/profiling/switchboard [--sessions 10000] [--rounds 3] [--n 1000]
                      [--callgrind 100]
"""
import argparse
import json
import os
import random
import shutil
import tempfile
import time

from local_gateway import LocalGateway, callgrind_dump
from turn_kernel import cpu_us, load, switches

PAGE = {"limit": 200}
WHOLE = {"limit": 200, "activeMinutes": 100_000_000}


def faults(pid):
    """The process's minor page faults (a page it touched for the first time since the kernel
    gave it, or gave it back)."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def block(gw, pid, n, step):
    """The gateway's CPU (µs), its threads' context switches and its page faults over n steps."""
    u0, s0 = cpu_us(pid)
    w0, f0 = sum(switches(pid)), faults(pid)
    for i in range(n):
        step(i)
    u1, s1 = cpu_us(pid)
    return u1 - u0 + s1 - s0, sum(switches(pid)) - w0, faults(pid) - f0


def instructions(out_dir, pid, n, step):
    """The gateway's instructions over n steps, from the callgrind dump made after them."""
    for i in range(n):
        step(i)
    return callgrind_dump(pid, out_dir)[1]


def steps_of(local, args):
    gw = local.gw
    rng = random.Random(7)

    def turn(_):
        local.turn("hi", session="bench-%06d" % rng.randrange(args.sessions))

    def listed(params):
        rows = gw.call("sessions.list", params, timeout_ms=600000)["sessions"]
        if len(rows) != 200:
            raise RuntimeError("a page of %d rows" % len(rows))

    return {
        "list": lambda i: listed(PAGE),
        "turn": turn,
        "turn+list": lambda i: (turn(i), listed(PAGE)),
        "turn+whole": lambda i: (turn(i), listed(WHOLE)),
    }


def derived(per_op):
    return {"perOp": {k: round(v, 1) for k, v in per_op.items()},
            "listAfterWrite": round(per_op["turn+list"] - per_op["turn"], 1),
            "wholeAfterWrite": round(per_op["turn+whole"] - per_op["turn"], 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--kit", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench"))
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--callgrind", type=int, default=0, help="operations a block under callgrind (0: none)")
    args = ap.parse_args()
    config = 'agents: { defaults: { model: "builtin/echo" } }'
    seed = ["dev", "seed", "--sessions", str(args.sessions), "--messages-per-session", "4"]
    base = {"bench": "list_after_write", "sessions": args.sessions}
    with LocalGateway(args.bin, args.kit, prefix="sb-listw-", config=config, seed=seed) as local:
        steps, pid = steps_of(local, args), local.proc.pid
        for name in steps:  # warm every path up
            block(local.gw, pid, 50, steps[name])
        time.sleep(5)  # the start's background mirror check
        for r in range(1, args.rounds + 1):
            out = dict(base, measure="cpuUs", round=r, n=args.n, loadBefore=load())
            blocks = {name: block(local.gw, pid, args.n, step) for name, step in steps.items()}
            out.update(derived({name: cpu / args.n for name, (cpu, _, _) in blocks.items()}))
            out["loadAfter"] = load()
            print(json.dumps(out), flush=True)
            out = dict(base, measure="contextSwitches", round=r, n=args.n)
            out.update(derived({name: sw / args.n for name, (_, sw, _) in blocks.items()}))
            print(json.dumps(out), flush=True)
            out = dict(base, measure="pageFaults", round=r, n=args.n)
            out.update(derived({name: pf / args.n for name, (_, _, pf) in blocks.items()}))
            print(json.dumps(out), flush=True)
    if not args.callgrind:
        return
    out_dir = tempfile.mkdtemp(prefix="sb-listw-cg-")
    wrapper = ["valgrind", "--tool=callgrind", "--callgrind-out-file=%s/callgrind.out.%%p" % out_dir]
    with LocalGateway(args.bin, args.kit, prefix="sb-listw-", config=config, seed=seed, wrapper=wrapper) as local:
        steps, pid = steps_of(local, args), local.proc.pid
        for name in steps:
            instructions(out_dir, pid, 20, steps[name])
        for r in range(1, args.rounds + 1):
            n = args.callgrind
            out = dict(base, measure="instructions", round=r, n=n)
            out.update(derived({name: instructions(out_dir, pid, n, step) / n for name, step in steps.items()}))
            print(json.dumps(out), flush=True)
    shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
