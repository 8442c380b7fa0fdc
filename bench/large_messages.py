#!/usr/bin/env python3
"""Memory after large messages: a real `switchboard gateway` on a temp state dir (the embedded
defaults: the scripted model, whose default reply quotes the user's text), N chat.send messages of
SIZE bytes into one session, each waited for, over one WebSocket (the bench kit's client). Prints
VmRSS (/proc/<pid>/status) after a warm-up turn, after the messages, and a few seconds later,
as one JSON line.

  large_messages.py --bin target/release/switchboard [--kit ../shared/bench] [--n 100]
                    [--size 1000000] [--rounds 1]

--rounds R sends the N messages R times (RSS read after each round), which tells a bounded
cache (flat after the first round) from a leak (growing each round). A message is one word (no
whitespace) unless --words: a model streams a reply word by word, and each streamed piece carries
the whole text so far (see docs/decisions.md, "Memory after large messages").
"""
import argparse
import json
import time

from local_gateway import LocalGateway, bench_args, rss_kb


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bench_args(ap)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--settle-s", type=float, default=5.0)
    ap.add_argument("--words", action="store_true")
    args = ap.parse_args()
    with LocalGateway(args.bin, args.kit, prefix="sb-large-") as local:
        turn, gw_proc = local.turn, local.proc
        turn("warm up")
        time.sleep(1)
        out = {"n": args.n, "size": args.size, "rssKbBefore": rss_kb(gw_proc.pid), "rounds": []}
        word = "lorem ipsum dolor sit amet " if args.words else "loremipsumdolorsitamet"
        for r in range(args.rounds):
            for i in range(args.n):
                head = "message %d.%d " % (r, i)
                body = (word * (args.size // len(word) + 1))[: args.size - len(head)]
                turn(head + body)
            out["rounds"].append(rss_kb(gw_proc.pid))
        time.sleep(args.settle_s)
        out["rssKbSettled"] = rss_kb(gw_proc.pid)
        local.gw.close()
        print(json.dumps(out))


if __name__ == "__main__":
    main()
