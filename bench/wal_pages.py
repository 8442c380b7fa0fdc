#!/usr/bin/env python3
"""Which b-trees each SQLite commit writes (issue 59 points 1 and 2): a real `switchboard
gateway` on a new store, the model bench/tool_mock.py (keeping its connections). After a warm-up,
the WAL's size and header are noted; then --n samples of a workload run, and the frames the WAL
gained are read back (each frame's header names its page; a frame with a database size ends a
commit) and each page is named by the b-tree that owns it (SQLite's `dbstat`, on a snapshot of
the store taken through SQLite's backup once the samples are done; a page no b-tree owns now is
a free page). Prints one JSON line: commits, frames a commit, the frames of each b-tree, and
every commit's b-trees in order.

  send   bench/agent_load.py's `sessions_send` with a wait, on the warm-up's pair of sessions:
         each sample first sends the target a turn of its own (`hello`), then the caller's turn
         with its `sessions_send`, the target's turn, and the reply-back loop and the announce
         that follow (they settle before the snapshot)
  turn   warm turns of the mock model on one session (`chat.send` + `agent.wait`, without an
         idempotency key)

The gateway checkpoints after 4,000 WAL pages; keep --n small enough that the samples stay
under that (a checkpoint restarts the WAL, which the header's salts show, and the count is
refused). Loopback only.

  bench/wal_pages.py --bin target/profiling/switchboard [--workload send] [--n 1]
"""
import argparse
import collections
import json
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_gateway import LocalGateway, mock_config, send_load, tool_mock  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER, FRAME_HEADER = 32, 24


def header(wal):
    """The WAL header's checkpoint sequence and salts: a checkpoint that restarts the WAL
    changes them."""
    with open(wal, "rb") as f:
        return f.read(HEADER)[12:24]


def frames(wal, start):
    """(page, database size) of each frame of the current WAL at or after byte `start` (a
    frame whose salts are not the header's is left over from before a restart)."""
    with open(wal, "rb") as f:
        data = f.read()
    page_size = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    out, at = [], HEADER
    while at + FRAME_HEADER + page_size <= len(data):
        if at >= start and data[at + 8:at + 16] == salts:
            out.append(struct.unpack(">II", data[at:at + 8]))
        at += FRAME_HEADER + page_size
    return out


def commits_of(pairs):
    """The frames cut into commits: a frame with a database size ends one (frames after the
    last such frame belong to no commit yet and are left out)."""
    commits, current = [], []
    for page, size in pairs:
        current.append(page)
        if size:
            commits.append(current)
            current = []
    return commits


def owners(db):
    """Each page's b-tree, from a snapshot of the live store (SQLite's backup)."""
    with tempfile.TemporaryDirectory(prefix="sb-wal-") as tmp:
        live = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        copy = sqlite3.connect(os.path.join(tmp, "copy.db"))
        try:
            live.backup(copy)
            return dict(copy.execute("SELECT pageno, name FROM dbstat"))
        finally:
            copy.close()
            live.close()


def run(args):
    mock, port = tool_mock(args.kit, "--keep-alive")
    try:
        with LocalGateway(args.bin, args.kit, prefix="sb-walp-", config=mock_config(port)) as gw:
            def workload(n):
                if args.workload == "turn":
                    for _ in range(n):
                        gw.turn("hi", session="agent:main:wal-pages")
                    return
                subprocess.run(send_load(args.kit, gw, n, 0.3), check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            workload(3)
            db = os.path.join(gw.home, "switchboard.db")
            start, before = os.path.getsize(db + "-wal"), header(db + "-wal")
            workload(args.n)
            time.sleep(0.5)
            if header(db + "-wal") != before:
                sys.exit("the WAL was restarted by a checkpoint during the samples: try a smaller --n")
            pairs = frames(db + "-wal", start)
            names = owners(db)
    finally:
        mock.terminate()
        mock.wait()
    commits = commits_of(pairs)
    named = [[names.get(page, "page %d (free)" % page) for page in commit] for commit in commits]
    tally = collections.Counter(name for commit in named for name in commit)
    in_commits = sum(len(commit) for commit in commits)
    return {"bench": "wal_pages", "workload": args.workload, "n": args.n, "commits": len(commits),
            "framesPerCommit": round(in_commits / max(len(commits), 1), 2),
            "framesByTree": dict(tally.most_common()), "commitsInOrder": named}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--kit", default=os.path.join(HERE, "..", "..", "shared", "bench"))
    ap.add_argument("--workload", choices=["send", "turn"], default="send")
    ap.add_argument("--n", type=int, default=1)
    print(json.dumps(run(ap.parse_args())))


if __name__ == "__main__":
    main()
