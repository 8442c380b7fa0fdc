#!/usr/bin/env python3
"""The slow tail of warm turns and sends (a commit that waits for a WAL checkpoint, a pause of
the runtime): builds side by side, each round on new gateways over one bench/tool_mock.py
(keeping its connections), rounds alternating the builds.
  turns  --n warm turns (`chat.send` + `agent.wait`) of the kit's Python client on one session
         after 50 to warm up: p50, p99, p99.9, the slowest, how many took over 8 ms, and the
         gateway's CPU a turn (/proc, 10 ms ticks);
  sends  `switchboard bench --workloads send --sends --n` (the build's own bench, each sample
         settled --settle-s): p50 and p99.
A WAL checkpoint comes every few thousand pages (a warm turn writes about 19, a send sample
about 200), so give enough turns or sends to cross several. One JSON line a build and round.
Loopback only.

  bench/stalls.py --bin before=/path/to/switchboard --bin after=/other [--rounds 3] [--n 3000]
                  [--workload turns|sends]
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_gateway import LocalGateway, mock_config, tool_mock  # noqa: E402


def cpu_ms(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 10.0


def turns(gw, n):
    for _ in range(50):
        gw.turn("warm")
    lat, c0 = [], cpu_ms(gw.proc.pid)
    for i in range(n):
        t = time.perf_counter()
        gw.turn("hello %d" % i)
        lat.append((time.perf_counter() - t) * 1000)
    cpu = (cpu_ms(gw.proc.pid) - c0) / n
    s = sorted(lat)
    return {"turns": n, "p50Ms": round(s[n // 2], 2), "p99Ms": round(s[int(n * .99)], 2),
            "p999Ms": round(s[int(n * .999)], 2), "maxMs": round(s[-1], 2),
            "over8Ms": sum(x > 8 for x in lat), "cpuMsPerTurn": round(cpu, 3)}


def sends(binary, gw, n, settle_s, out):
    target = "ours=%s,token=%s,pid=%d" % (gw.url, gw.token, gw.proc.pid)
    subprocess.run([binary, "bench", "--target", target, "--workloads", "send", "--sends", str(n),
                    "--send-settle-s", str(settle_s), "--rounds", "1", "--out", out],
                   check=True, capture_output=True)
    for line in open(out):
        d = json.loads(line)
        if d.get("summary"):
            return {"sends": d["ops"], "errors": d["errors"], "p50Ms": d["p50Ms"], "p99Ms": d["p99Ms"]}
    raise RuntimeError("switchboard bench wrote no summary")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append", required=True, help="NAME=PATH, repeat")
    ap.add_argument("--kit", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--workload", choices=["turns", "sends"], default="turns")
    ap.add_argument("--settle-s", type=float, default=0.2)
    args = ap.parse_args()
    kit = os.path.abspath(args.kit)
    builds = [b.split("=", 1) for b in args.bin]
    mock, port = tool_mock(kit, "--keep-alive")
    try:
        for r in range(1, args.rounds + 1):
            for name, binary in builds:
                with LocalGateway(binary, kit, config=mock_config(port)) as gw:
                    if args.workload == "turns":
                        row = turns(gw, args.n)
                    else:
                        row = sends(binary, gw, args.n, args.settle_s, os.path.join(gw.home, "sends.jsonl"))
                load = float(open("/proc/loadavg").read().split()[0])
                print(json.dumps({"build": name, "round": r, "workload": args.workload, **row, "load": load}),
                      flush=True)
    finally:
        mock.terminate()


if __name__ == "__main__":
    main()
