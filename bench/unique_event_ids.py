#!/usr/bin/env python3
"""Give every event of the kit's generated transcripts (gen_sessions.py) an id unique within its
file, keeping the parent chain. gen_sessions.py draws 8-hex-digit random ids, so a transcript of
100k+ events holds a few duplicates, and the reference's importer then drops the later event
and fails its own verification. Sequential ids of the same form avoid that.

  unique_event_ids.py STATE_DIR [--agent main]
"""
import argparse
import glob
import json
import os


def rewrite(path):
    lines, previous = [], None
    with open(path) as f:
        for n, line in enumerate(f):
            event = json.loads(line)
            if "id" in event and event.get("type") != "session":
                event["id"] = f"{n:08x}"
                event["parentId"] = previous
                previous = event["id"]
            lines.append(json.dumps(event, separators=(",", ":")))
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("state_dir")
    ap.add_argument("--agent", default="main")
    args = ap.parse_args()
    for path in glob.glob(os.path.join(args.state_dir, "agents", args.agent, "sessions", "*.jsonl")):
        rewrite(path)


if __name__ == "__main__":
    main()
