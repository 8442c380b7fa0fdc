#!/usr/bin/env python3
"""The gateway's instructions over N operations only (issue 59 points 1 and 2): a real
`switchboard gateway` under callgrind with its instrumentation off, warmed up, then turned on
(`callgrind_control -i on`) for exactly the measured operations and dumped. Start-up, warm-up and
shutdown are not counted, so two builds compare without `bench/turn_path.sh`'s difference of two
runs (whose start-ups alone differ by a few percent). Workloads:

  turn   warm `builtin/echo` turns on one session over one WebSocket (the bench kit's client,
         `turn --repeat N`: a `chat.send` and an `agent.wait`), after 50 to warm up
  send   bench/agent_load.py's `sessions_send` samples on bench/tool_mock.py (keeping its
         connections), after 3 to warm up: each sample is the target's turn, the caller's
         timed turn, the reply-back loop and announce, and the transcript reads of the settle

Prints one JSON line per build and round: the instructions per operation and the callgrind
file (kept with --keep DIR, for `callgrind_annotate`). Rounds alternate the builds. Loopback
only; needs valgrind.

  instr_window.py --bin before=/path/a --bin after=/path/b [--workload turn|send] [--n 200]
                  [--rounds 2] [--keep DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_gateway import LocalGateway, callgrind_dump, mock_config, send_load, tool_mock  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ECHO = 'agents: { defaults: { model: "builtin/echo" } }'


def control(pid, *args):
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def measure(binary, args, out):
    """Runs the workload's warm-up, then N operations with the instrumentation on; answers the
    dumped file's path and the instructions it counted."""
    wrapper = ["valgrind", "--tool=callgrind", "--dump-instr=no", "--instr-atstart=no",
               "--callgrind-out-file=" + out]
    mock, config = None, ECHO
    if args.workload == "send":
        mock, port = tool_mock(args.kit, "--keep-alive")
        config = mock_config(port)
    try:
        with LocalGateway(binary, args.kit, prefix="sb-instr-", config=config,
                          wrapper=wrapper) as gw:
            if args.workload == "turn":
                gw.gw.close()
                client = os.path.join(args.kit, "client", "gw_client.py")

                def run(n):
                    subprocess.run([sys.executable, client, "--url", gw.url, "--token", gw.token,
                                    "turn", "--session-key", "bench", "--message", "hi",
                                    "--repeat", str(n)], check=True, stdout=subprocess.DEVNULL)
                warm = 50
            else:
                def run(n):
                    subprocess.run(send_load(args.kit, gw, n, 0.3), check=True,
                                   stdout=subprocess.DEVNULL)
                warm = 3
            run(warm)
            control(gw.proc.pid, "-i", "on")
            run(args.n)
            control(gw.proc.pid, "-i", "off")
            return callgrind_dump(gw.proc.pid, os.path.dirname(out), os.path.basename(out))
    finally:
        if mock:
            mock.terminate()
            mock.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, help="name=path, once per build")
    ap.add_argument("--workload", choices=["turn", "send"], default="turn")
    ap.add_argument("--n", type=int, default=None, help="operations measured (200 turns, 10 sends)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--kit", default=os.path.join(HERE, "..", "..", "shared", "bench"))
    ap.add_argument("--keep", default=None, help="keep the callgrind files in this directory")
    args = ap.parse_args()
    args.kit = os.path.abspath(args.kit)
    args.n = args.n or (200 if args.workload == "turn" else 10)
    builds = [b.split("=", 1) for b in args.bin]
    keep = args.keep or tempfile.mkdtemp(prefix="sb-instr-")
    os.makedirs(keep, exist_ok=True)
    for r in range(1, args.rounds + 1):
        for name, binary in builds:
            out = os.path.join(keep, "%s-%s-r%d.callgrind" % (args.workload, name, r))
            dumped, total = measure(binary, args, out)
            print(json.dumps({"bench": "instr_window", "workload": args.workload, "build": name,
                              "round": r, "n": args.n,
                              "instructionsPerOp": round(total / args.n),
                              "file": dumped}), flush=True)


if __name__ == "__main__":
    main()
