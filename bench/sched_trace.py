#!/usr/bin/env python3
"""Where the processes of a `sessions_send` run, and how often they hand the core to each other
(issue 59 points 1 and 2). One gateway on a new store, the model bench/tool_mock.py (keeping
its connections), bench/agent_load.py's send workload as the client; after a warm-up, N samples
under `perf record -a` with the scheduler's and the system calls' tracepoints. Prints one JSON
line:

- per process (gateway, mock, client): its traced events by CPU (the share on each vCPU), its
  switches out while still runnable (preempted) and while sleeping;
- the gateway preempted by the process it had just woken (a `sched_wakeup` of that process by
  the gateway, then the gateway switched out runnable to it): how often a frame or a request
  puts the other side's work before the gateway's own;
- per sample: the gateway's writes to the client (`sendto` on the client's socket is not told
  apart from other `sendto`s: all are counted) and requests to the model (`writev`).

At low load this machine's kernel (`sched_vcpu_pack`) keeps the three on one vCPU, so a send's
wall time is the sum of their CPU (BENCHMARKS.md, 2026-12-01, last). Loopback only; needs perf
with tracepoint access (root).

  bench/sched_trace.py --bin target/profiling/switchboard [--n 3] [--keep perf.data]
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_gateway import LocalGateway, mock_config, send_load, tool_mock  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EVENTS = "raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_switch,sched:sched_wakeup"
SENDTO, WRITEV = 44, 20
LINE = re.compile(r"\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+[\d.]+:\s+(\S+):\s*(.*)")


def trace(args, out):
    """Runs the workload with perf recording into `out`; answers the three processes' pids and
    the traced samples' latencies."""
    mock, port = tool_mock(args.kit, "--keep-alive")
    config = mock_config(port)
    try:
        with LocalGateway(args.bin, args.kit, prefix="sb-sched-", config=config) as gw:
            def client(n):
                return subprocess.Popen(send_load(args.kit, gw, n, 0.3), stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
            client(3).communicate()
            perf = subprocess.Popen(["perf", "record", "-a", "-e", EVENTS, "-o", out],
                                    stderr=subprocess.DEVNULL)
            time.sleep(1)
            load = client(args.n)
            load_pid = load.pid
            stdout, _ = load.communicate()
            perf.send_signal(2)
            perf.wait()
            if load.returncode != 0:
                sys.exit("agent_load.py failed")
            latency = json.loads(stdout.decode().strip().splitlines()[-1])["latencyMs"]
            return {"gateway": gw.proc.pid, "mock": mock.pid, "client": load_pid}, latency
    finally:
        mock.terminate()
        mock.wait()


def events(path, pids):
    """The traced events of the three processes: (who, cpu, event, fields)."""
    script = subprocess.run(["perf", "script", "-i", path, "-F", "comm,pid,tid,cpu,time,event,trace"],
                            capture_output=True, text=True, check=True).stdout
    who = {pid: name for name, pid in pids.items()}
    for line in script.splitlines():
        m = LINE.match(line)
        if m and int(m.group(2)) in who:
            yield who[int(m.group(2))], int(m.group(4)), m.group(5), m.group(6)


def count(stream, pids):
    by_cpu = collections.defaultdict(collections.Counter)
    switched = collections.defaultdict(collections.Counter)
    calls = collections.Counter()
    preempted_by_woken, woken = 0, None
    name_of = {str(pid): name for name, pid in pids.items()}
    for who, cpu, event, fields in stream:
        by_cpu[who][cpu] += 1
        if event == "sched:sched_wakeup" and who == "gateway":
            # The last process the gateway woke since it last left the core.
            woken = name_of.get(re.search(r"pid=(\d+)", fields).group(1))
        elif event == "sched:sched_switch":
            state = re.search(r"prev_state=(\S+)", fields).group(1)
            running = state.startswith("R")
            switched[who]["preempted" if running else "slept"] += 1
            if who == "gateway":
                nxt = re.search(r"next_pid=(\d+)", fields).group(1)
                if running and woken and name_of.get(nxt) == woken:
                    preempted_by_woken += 1
                woken = None
        elif event == "raw_syscalls:sys_enter" and who == "gateway":
            nr = int(fields.split()[1])
            if nr in (SENDTO, WRITEV):
                calls["sendto" if nr == SENDTO else "writev"] += 1
    return by_cpu, switched, calls, preempted_by_woken


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--kit", default=os.path.join(HERE, "..", "..", "shared", "bench"))
    ap.add_argument("--n", type=int, default=3, help="send samples traced")
    ap.add_argument("--keep", default=None, help="keep the perf data at this path")
    args = ap.parse_args()
    args.kit = os.path.abspath(args.kit)
    out = args.keep or tempfile.NamedTemporaryFile(prefix="sb-sched-", suffix=".data", delete=False).name
    try:
        pids, latency = trace(args, out)
        by_cpu, switched, calls, preempted = count(events(out, pids), pids)
    finally:
        if not args.keep and os.path.exists(out):
            os.unlink(out)
    share = {who: {"cpu%d" % cpu: round(n / sum(c.values()), 3) for cpu, n in sorted(c.items())}
             for who, c in by_cpu.items()}
    print(json.dumps({"bench": "sched_trace", "samples": args.n, "sendP50Ms": latency["p50"],
                      "eventsByCpu": share, "switchesOut": {w: dict(c) for w, c in switched.items()},
                      "gatewayPreemptedByWoken": preempted,
                      "perSample": {k: round(v / args.n, 1) for k, v in calls.items()}}))


if __name__ == "__main__":
    main()
