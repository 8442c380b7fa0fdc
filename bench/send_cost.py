#!/usr/bin/env python3
"""`sessions_send` with a wait at the model's cost (issue 59 point 2): what the gateway adds to
the model calls a send makes. One gateway on a new store, the model bench/tool_mock.py with
--timing; each round runs bench/agent_load.py's send workload over the kit's client and reads,
per sample, the timed turn's wall time, the time the model's calls took inside it, and the
rest (the gateway's share, the loopback's transit counted in it). Rounds cycle through --mocks,
the ways the mock serves: `close` (every streamed reply closes its connection, the kit mock's
way), `keep-alive` (as a provider's endpoint does) and `one-write` (kept connections, each
answer in one write from an event loop: less of the mock's own time), so they are measured on
the same build at the same load. Loopback only; prints one JSON line a round.

  bench/send_cost.py --bin target/profiling/switchboard [--n 40] [--rounds 4] [--settle-s 0.5]
                     [--mocks close,keep-alive]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_gateway import LocalGateway, mock_config, send_args, send_load, tool_mock  # noqa: E402


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def one_round(args, served):
    timing = tempfile.NamedTemporaryFile(prefix="sb-send-timing-", suffix=".jsonl", delete=False).name
    mock, port = tool_mock(args.kit, "--timing", timing, *([] if served == "close" else ["--" + served]))
    try:
        config = mock_config(port)
        with LocalGateway(args.bin, args.kit, prefix="sb-send-", config=config) as gw:
            before = load()
            out = subprocess.run(send_load(args.kit, gw, args.n, args.settle_s, "--model-timing", timing),
                                 capture_output=True, text=True, check=False)
            if out.returncode != 0 and not out.stdout:
                raise RuntimeError("agent_load.py failed: %s" % out.stderr[-2000:])
            result = json.loads(out.stdout.strip().splitlines()[-1])
            result.update(keepAlive=served != "close", mock=served, loadBefore=before, loadAfter=load())
            return result
    finally:
        mock.terminate()
        mock.wait()
        os.unlink(timing)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--mocks", default="close,keep-alive", help="the rounds cycle through these")
    args = send_args(ap, n=40, rounds=4)
    mocks = args.mocks.split(",")
    for served in mocks:
        if served not in ("close", "keep-alive", "one-write"):
            sys.exit("send_cost.py: --mocks takes close, keep-alive and one-write, got %r" % served)
    for r in range(args.rounds):
        result = one_round(args, mocks[r % len(mocks)])
        result["round"] = r
        print(json.dumps(result), flush=True)
        time.sleep(1)


if __name__ == "__main__":
    main()
