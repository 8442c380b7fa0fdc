#!/usr/bin/env python3
"""Two layouts of the transcripts' `messages` table under a gateway's append pattern, on
Python's own SQLite (the same file format; not the gateway's bundled build): WAL pages a commit
and a `chat.history {limit:50}`-shaped read (BENCHMARKS.md, 2026-12-01, evening).

  without-rowid  the store's table: PRIMARY KEY (session_id, seq), WITHOUT ROWID: a session's
                 messages sit together, and each append lands inside the tree, on its
                 session's last leaf
  rowid          the bodies in a rowid table (each append at the tree's end), with a unique
                 index on (session_id, seq)

A store of --sessions sessions of 4 messages each (one commit, then checkpointed), then --turns
turns over --active sessions: each turn appends a user message and an answer, one commit each
(bodies of --body to --body + 99 bytes). Prints one JSON line per layout: WAL frames a commit,
the mean time of the history read (the 50 newest messages of an active session, page cache
warm), the store's pages.

  bench/messages_layout.py [--sessions 10000] [--active 8] [--turns 2000] [--body 300]
"""
import argparse
import json
import os
import random
import sqlite3
import struct
import tempfile
import time

LAYOUTS = {
    "without-rowid": ["CREATE TABLE messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL, "
                      "role TEXT NOT NULL, ts INTEGER NOT NULL, body TEXT NOT NULL, "
                      "PRIMARY KEY (session_id, seq)) WITHOUT ROWID"],
    "rowid": ["CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, "
              "seq INTEGER NOT NULL, role TEXT NOT NULL, ts INTEGER NOT NULL, body TEXT NOT NULL)",
              "CREATE UNIQUE INDEX messages_by_session ON messages (session_id, seq)"],
}
INSERT = "INSERT INTO messages (session_id, seq, role, ts, body) VALUES (?, ?, ?, ?, ?)"
HISTORY = "SELECT body FROM messages WHERE session_id = ? ORDER BY seq DESC LIMIT 50"
READS = 2000


def wal_frames(path):
    with open(path, "rb") as f:
        data = f.read()
    page_size = struct.unpack(">I", data[8:12])[0]
    return (len(data) - 32) // (24 + page_size)


def measure(layout, args, directory):
    path = os.path.join(directory, layout + ".db")
    con = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "wal_autocheckpoint=0"):
        con.execute("PRAGMA " + pragma)
    for statement in LAYOUTS[layout]:
        con.execute(statement)
    rng = random.Random(1)
    ids = ["%08x-0000-4000-8000-%012x" % (rng.getrandbits(32), i) for i in range(args.sessions)]
    con.execute("BEGIN")
    for session in ids:
        for seq in range(1, 5):
            con.execute(INSERT, (session, seq, "user", 0, "x" * args.body))
    con.execute("COMMIT")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    seqs = dict.fromkeys(ids, 4)
    active = rng.sample(ids, args.active)
    for turn in range(args.turns):
        session = rng.choice(active)
        for role in ("user", "assistant"):
            seqs[session] += 1
            body = "y" * (args.body + rng.randrange(100))
            con.execute(INSERT, (session, seqs[session], role, turn, body))
    frames = wal_frames(path + "-wal")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    start = time.perf_counter()
    for i in range(READS):
        con.execute(HISTORY, (active[i % args.active],)).fetchall()
    read_us = (time.perf_counter() - start) / READS * 1e6
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    con.close()
    return {"bench": "messages_layout", "layout": layout, "sqlite": sqlite3.sqlite_version,
            "commits": args.turns * 2, "framesPerCommit": round(frames / (args.turns * 2), 2),
            "historyReadUs": round(read_us, 1), "pages": pages}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=10000)
    ap.add_argument("--active", type=int, default=8)
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--body", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sb-layout-") as directory:
        for layout in LAYOUTS:
            print(json.dumps(measure(layout, args, directory)))


if __name__ == "__main__":
    main()
