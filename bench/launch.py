#!/usr/bin/env python3
"""Start a gateway and time it to ready: from spawning the process until a WebSocket client has
hello-ok and a `health` answer (the bench kit's definition), with the client already loaded, so
the figure does not include starting a Python interpreter. The gateway keeps running; prints
{"pid", "readyMs"} as one JSON line.

  launch.py --kit KIT --port P --token T --out FILE --err FILE -- COMMAND...
"""
import argparse
import json
import os
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kit", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--err", required=True)
    ap.add_argument("--timeout-s", type=float, default=30)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    sys.path.insert(0, os.path.join(os.path.abspath(args.kit), "client"))
    from gw_client import Gw

    url = f"ws://127.0.0.1:{args.port}"
    with open(args.out, "w") as out, open(args.err, "w") as err:
        t0 = time.perf_counter()
        gateway = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    while True:
        try:
            gw = Gw(url, args.token, timeout=5.0)
            gw.call("health", {}, timeout_ms=5000)
            ready_ms = (time.perf_counter() - t0) * 1000
            gw.close()
            break
        except Exception:  # refused while starting, closed, not yet serving
            if gateway.poll() is not None:
                sys.exit(f"the gateway exited with status {gateway.returncode}; see {args.err}")
            if time.perf_counter() - t0 > args.timeout_s:
                sys.exit(f"the gateway was not ready within {args.timeout_s} s")
            time.sleep(0.002)
    print(json.dumps({"pid": gateway.pid, "readyMs": round(ready_ms, 1)}), flush=True)


if __name__ == "__main__":
    main()
