#!/usr/bin/env python3
"""Cold start and idle RSS of the switchboard gateway (Python >= 3.8, standard library only).

Each run spawns `switchboard --state-dir DIR gateway --port 0`, reads the real port from its
"listening on ws://…" line, reads the token from DIR/gateway-token, connects with the bench kit's
protocol v4 client and calls `sessions.list`. Cold start = wall time from spawn to that first
successful response (the client's connect + handshake included). The gateway is then stopped with
SIGTERM before the next run.

  cold_start.py --bin target/release/switchboard --state-dir DIR [--fresh] [--runs 10]
                [--rss-after-s 2] [--label NAME] [--kit ../shared/bench]

--fresh       every run gets a new empty state dir under DIR (first start: schema + token);
              without it every run reuses DIR (a restart over whatever DIR holds).
--rss-after-s after the last run's first sessions.list, wait this long and read VmRSS of the
              gateway process from /proc/<pid>/status (0 = skip).

Prints one JSON line per figure on stdout ({"figure": "cold_start", …} and {"figure": "idle_rss", …});
exit status 1 if a run failed.
"""
import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time


def load_client(kit):
    sys.dont_write_bytecode = True  # the kit folder is read-only: leave no __pycache__ in it
    sys.path.insert(0, os.path.join(kit, "client"))
    import gw_client  # noqa: E402  (the kit's client, used as a module)

    return gw_client


def nearest_rank(xs, p):
    s = sorted(xs)
    return s[max(0, math.ceil(p * len(s)) - 1)]


def summary(xs):
    r = lambda x: round(x, 2)
    return {"n": len(xs), "min": r(min(xs)), "p50": r(nearest_rank(xs, 0.5)),
            "p90": r(nearest_rank(xs, 0.9)), "max": r(max(xs)), "mean": r(sum(xs) / len(xs))}


def read_status(pid):
    """VmRSS and VmHWM of a process, in KiB."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def one_run(gw_client, binary, state_dir, log, rss_after_s):
    """Spawn, wait for the first successful sessions.list, optionally read RSS, stop."""
    env = dict(os.environ)
    env.pop("SWITCHBOARD_CONFIG", None)
    t0 = time.perf_counter()
    proc = subprocess.Popen([binary, "--state-dir", state_dir, "gateway", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=log, env=env)
    try:
        url = None
        while url is None:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("gateway exited (status %s) before listening; see %s"
                                   % (proc.wait(), log.name))
            text = line.decode("utf-8", "replace")
            if "listening on ws://" in text:
                url = text.split("listening on ", 1)[1].split()[0]
        listen_ms = (time.perf_counter() - t0) * 1000
        with open(os.path.join(state_dir, "gateway-token")) as f:
            token = f.read().strip()
        attempts = 0
        while True:
            attempts += 1
            try:
                gw = gw_client.Gw(url, token, timeout=5.0)
                try:
                    result = gw.call("sessions.list", {}, timeout_ms=10000)
                finally:
                    gw.close()
                break
            except (gw_client.GwError, gw_client.WsClosed, OSError, TimeoutError):
                if attempts >= 50 or proc.poll() is not None:
                    raise
                time.sleep(0.01)
        ready_ms = (time.perf_counter() - t0) * 1000
        rss = None
        if rss_after_s > 0:
            time.sleep(rss_after_s)
            rss = read_status(proc.pid)
        return {"listenMs": listen_ms, "readyMs": ready_ms, "attempts": attempts,
                "count": result.get("count") if isinstance(result, dict) else None, "rss": rss}
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rss-after-s", type=float, default=0)
    ap.add_argument("--label", default="")
    ap.add_argument("--kit", default=os.environ.get("BENCH_KIT", "/work/shared/bench"))
    args = ap.parse_args()
    gw_client = load_client(args.kit)
    os.makedirs(args.state_dir, exist_ok=True)
    log = open(os.path.join(args.state_dir, "cold-start-gateway.log"), "ab")
    runs = []
    for i in range(args.runs):
        state = tempfile.mkdtemp(prefix="run-%02d-" % i, dir=args.state_dir) if args.fresh else args.state_dir
        last = i == args.runs - 1
        runs.append(one_run(gw_client, args.bin, state, log, args.rss_after_s if last else 0))
    listed = runs[-1]["count"]
    print(json.dumps({
        "figure": "cold_start", "store": args.label, "fresh": args.fresh, "runs": len(runs),
        "sessionsListed": listed,
        "readyMs": summary([r["readyMs"] for r in runs]),
        "listenMs": summary([r["listenMs"] for r in runs]),
        "samplesMs": [round(r["readyMs"], 1) for r in runs],
    }), flush=True)
    rss = runs[-1]["rss"]
    if rss:
        print(json.dumps({
            "figure": "idle_rss", "store": args.label, "afterS": args.rss_after_s,
            "rssKiB": rss.get("VmRSS"), "rssMiB": round(rss.get("VmRSS", 0) / 1024, 1),
            "hwmMiB": round(rss.get("VmHWM", 0) / 1024, 1),
        }), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a failed run: say why, exit 1
        sys.stderr.write("cold_start.py: %s: %s\n" % (type(e).__name__, e))
        sys.exit(1)
