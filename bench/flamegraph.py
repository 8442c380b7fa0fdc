#!/usr/bin/env python3
"""A flame graph from `perf script` output, with no tool beyond Python.

Folds each sample's stack (root first, `;`-joined, Rust hashes and argument lists cut) and
draws the folded stacks as an SVG: each frame a box as wide as its share of the samples.

    perf record -e cpu-clock -g -p PID -o perf.data -- sleep 10
    perf script -i perf.data | bench/flamegraph.py --title "echo turns" > flame.svg
    perf script -i perf.data | bench/flamegraph.py --folded > folded.txt

Loopback only; reads stdin, writes stdout.
"""

import argparse
import html
import re
import sys
from collections import Counter

HASH = re.compile(r"::h[0-9a-f]{16}$")


def frame_name(line):
    """The symbol of one `perf script` stack line (`addr sym+off (dso)`)."""
    parts = line.strip().split(None, 1)
    if len(parts) < 2:
        return None
    sym = parts[1]
    sym = re.sub(r" \([^()]*\)$", "", sym)  # the dso
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    sym = HASH.sub("", sym)
    if sym == "[unknown]":
        return None
    return sym.replace(";", ":")


def fold(lines):
    """Counter of root-first `;`-joined stacks, one per sample."""
    stacks = Counter()
    comm, frames = None, []
    for line in lines:
        if not line.strip():
            if comm is not None:
                stacks[";".join([comm] + frames[::-1])] += 1
            comm, frames = None, []
            continue
        if not line[0].isspace():
            comm = line.split()[0]
            frames = []
            continue
        name = frame_name(line)
        if name:
            frames.append(name)
    if comm is not None:
        stacks[";".join([comm] + frames[::-1])] += 1
    return stacks


def tree(stacks):
    root = {"n": 0, "c": {}}
    for stack, count in stacks.items():
        node = root
        node["n"] += count
        for name in stack.split(";"):
            node = node["c"].setdefault(name, {"n": 0, "c": {}})
            node["n"] += count
    return root


def colour(name):
    h = sum(ord(c) for c in name)
    return f"rgb({205 + h % 50},{80 + h % 120},{40 + h % 50})"


def svg(root, title, width=1800, row=16):
    total = root["n"] or 1
    boxes = []

    def walk(node, name, x, depth):
        w = node["n"] / total * width
        if w < 0.3:
            return
        if name is not None:
            boxes.append((x, depth, w, name, node["n"]))
        cx = x
        for child_name, child in sorted(node["c"].items()):
            walk(child, child_name, cx, depth + (name is not None))
            cx += child["n"] / total * width

    walk(root, None, 0.0, 0)
    depth = max((b[1] for b in boxes), default=0) + 1
    height = (depth + 3) * row
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="monospace" font-size="11">',
        f'<text x="4" y="{row}">{html.escape(title)} ({total} samples)</text>',
    ]
    for x, d, w, name, n in boxes:
        y = height - (d + 1) * row
        label = html.escape(name)
        share = f"{n / total * 100:.2f}%"
        text = label[: int(w / 7)] if w > 21 else ""
        out.append(
            f'<g><title>{label} ({n} samples, {share})</title>'
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" fill="{colour(name)}"/>'
            f'<text x="{x + 2:.1f}" y="{y + row - 4}">{text}</text></g>'
        )
    out.append("</svg>")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--title", default="flame graph")
    ap.add_argument("--folded", action="store_true", help="print the folded stacks instead")
    args = ap.parse_args()
    stacks = fold(sys.stdin)
    if args.folded:
        for stack, count in stacks.most_common():
            print(f"{stack} {count}")
    else:
        print(svg(tree(stacks), args.title))


if __name__ == "__main__":
    main()
