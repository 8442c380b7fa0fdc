#!/usr/bin/env python3
"""The kernel's share of a warm `builtin/echo` turn (issue 59 point 1), for several builds in
interleaved rounds. For each build and round, a real `switchboard gateway` on a temp state dir
(SQLite, default config, model `builtin/echo`), driven by the bench kit's client over loopback
(`turn`: a `chat.send` and an `agent.wait` on one WebSocket), 50 turns to warm up, then:

- over --wall turns, from /proc: the gateway's user and system CPU per turn (µs; utime and
  stime), its context switches per turn (voluntary and not, summed over its threads) and the
  client's p50; from getrusage, the client's own CPU and voluntary context switches per turn
  (at low load this machine runs the client on the gateway's vCPU, so every frame that wakes
  the client costs the turn its work too);
- over --traced turns under `strace -c -f`: the gateway's system calls per turn, by kind (strace
  slows the gateway; the counts do not depend on it).

Every line gives the machine's load average before and after. One JSON line per build and round.

  turn_kernel.py --bin this=target/profiling/switchboard [--bin base=/tmp/other] [--rounds 3]
                 [--wall 3000] [--traced 1000] [--kit ../shared/bench]
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time

from local_gateway import LocalGateway, builds_args

TICK_US = 1_000_000 / os.sysconf("SC_CLK_TCK")


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cpu_us(pid):
    """The process's (user, system) CPU in µs."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) * TICK_US, int(fields[12]) * TICK_US


def switches(pid):
    """Voluntary and involuntary context switches, summed over the process's threads."""
    vol = invol = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    vol += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    invol += int(line.split()[1])
    return vol, invol


def strace_counts(path, turns):
    """System calls per turn by kind, from `strace -c` output."""
    counts = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
                counts[parts[-1]] = round(int(parts[3]) / turns, 2)
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def measure(name, binary, args, turns_cmd):
    config = 'agents: { defaults: { model: "builtin/echo" } }'
    with LocalGateway(binary, args.kit, prefix="sb-kernel-", config=config) as local:
        local.gw.close()  # the turns go through the kit's client, on a connection of their own
        proc = local.proc
        turns = lambda n: json.loads(turns_cmd(local.url, local.token, n))  # noqa: E731
        turns(50)
        out = {"bench": "turn_kernel", "build": name, "loadBefore": load()}
        time.sleep(1)
        (u0, s0), (v0, i0) = cpu_us(proc.pid), switches(proc.pid)
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p50 = turns(args.wall)["latencyMs"]["p50"]
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        (u1, s1), (v1, i1) = cpu_us(proc.pid), switches(proc.pid)
        n = args.wall
        client_us = (c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime) * 1e6
        out.update({"clientCpuUs": round(client_us / n, 1),
                    "clientVoluntaryPerTurn": round((c1.ru_nvcsw - c0.ru_nvcsw) / n, 2)})
        out.update({"turns": n, "userUs": round((u1 - u0) / n, 1), "systemUs": round((s1 - s0) / n, 1),
                    "cpuUs": round((u1 - u0 + s1 - s0) / n, 1), "voluntaryPerTurn": round((v1 - v0) / n, 2),
                    "involuntaryPerTurn": round((i1 - i0) / n, 2), "p50Ms": p50})
        if args.traced:
            trace = os.path.join(local.home, "strace.txt")
            tracer = subprocess.Popen(["strace", "-c", "-f", "-p", str(proc.pid), "-o", trace],
                                      stderr=subprocess.DEVNULL)
            time.sleep(1)
            turns(args.traced)
            tracer.terminate()
            tracer.wait(timeout=30)
            calls = strace_counts(trace, args.traced)
            out.update({"syscallsPerTurn": round(sum(calls.values()), 1), "byKind": calls})
        out["loadAfter"] = load()
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    builds_args(ap)
    ap.add_argument("--wall", type=int, default=3000)
    ap.add_argument("--traced", type=int, default=1000)
    args = ap.parse_args()
    if args.traced and not shutil.which("strace"):
        sys.exit("strace is not installed (apt install strace), or pass --traced 0")
    client = os.path.join(args.kit, "client", "gw_client.py")

    def turns_cmd(url, token, n):
        return subprocess.check_output([sys.executable, client, "--url", url, "--token", token, "turn",
                                        "--session-key", "bench", "--message", "hi", "--repeat", str(n)])

    for r in range(1, args.rounds + 1):
        for pair in args.bin:
            name, binary = pair.split("=", 1)
            out = measure(name, binary, args, turns_cmd)
            out["round"] = r
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
