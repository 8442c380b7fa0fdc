#!/usr/bin/env python3
"""Print bench/compare.sh's results (a JSONL file) as one table: figure, switchboard, reference,
ratio, floor; then the machine's load averages at the run's start and end. The ratio says how
many times better switchboard's figure is (time, memory: reference ÷ ours; throughput: ours ÷
reference). A missing or failed measurement prints why.
Figures measured by `switchboard bench` also show the gateway's CPU per operation, and the floor
column what the do-nothing server took for the same operations.

  compare_table.py RESULTS.jsonl [--markdown]
"""
import json
import sys

GATEWAYS = ("switchboard", "reference")


def load(path):
    rows = {}
    for line in open(path):
        d = json.loads(line)
        rows.setdefault(d["step"], {})[d["gateway"]] = d
    return rows


def ms(x):
    return f"{x:,.0f} ms" if x >= 100 else f"{x:.2f} ms" if x < 10 else f"{x:.1f} ms"


def latency(d, rows_of=None):
    """(p50, text) of a client result line."""
    r = (d or {}).get("result")
    if not r:
        return None, "failed or timed out"
    if r.get("errors"):
        first = next(iter(r.get("errorMessages") or {"?": 0}))
        return None, f'{r["errors"]} of {r["errors"] + r["ok"]} failed: {first[:60]}'
    lat = r["latencyMs"]
    if lat["n"] == 1:
        return lat["p50"], ms(lat["p50"])
    text = f'p50 {ms(lat["p50"])} (p99 {ms(lat["p99"])}, n={lat["n"]})'
    if rows_of is not None:
        text += f", {rows_of} rows"
    return lat["p50"], text


def bench_figure(s, step, gw):
    """(value for the ratio, text) of one `switchboard bench` summary line."""
    if s["errors"]:
        return None, f'{s["errors"]} of {s["errors"] + s["ops"]} failed'
    if not s["ops"]:
        return None, "no operations"
    cpu = f', CPU {ms(s["cpuPerOpMs"])}/op' if s.get("cpuPerOpMs") is not None else ""
    if step == "parallel-turns" and s.get("extra"):
        return 1 / s["extra"], f'{s["extra"]:,.0f} turns/s (p50 {ms(s["p50Ms"])}{cpu})'
    if step == "spawn" and gw != "floor":
        if s.get("extra") is None:
            return None, f'not all announced in time ({s["ops"]} spawn turns done)'
        return s["extra"], f'{s["extra"] / 1000:.2f} s ({s["ops"]} spawns{cpu})'
    return s["p50Ms"], f'p50 {ms(s["p50Ms"])} (p99 {ms(s["p99Ms"])}, n={s["ops"]}{cpu})'


def figure(rows, step, gw):
    """(value for the ratio, text) of one step on one gateway; a lower value is better."""
    kind = step.split(".")[0]
    if kind == "idle":  # read with the ready time
        step = "ready" + step[len("idle"):]
    d = rows.get(step, {}).get(gw)
    if d is None:
        return None, "not run"
    if "bench" in d:
        return bench_figure(d["bench"], step, gw)
    if kind == "idle":
        return d["idleRssMiB"], f'{d["idleRssMiB"]:,.1f} MiB ({d.get("idleAfterS", 15)} s after ready)'
    if kind == "ready":
        return d["readyMs"], ms(d["readyMs"])
    if kind.startswith("rss-after"):
        return d["rssMiB"], f'{d["rssMiB"]:,.1f} MiB'
    if step == "parallel-turns":
        r = d.get("result")
        if not r:
            return None, "did not finish within PAR_TIMEOUT_S"
        tps = r["ok"] / (r["wallMs"] / 1000)
        errors = f', {r["errors"]} errors' if r.get("errors") else ""
        return 1 / tps, f'{tps:,.0f} turns/s (p50 {ms(r["latencyMs"]["p50"])}{errors})'
    if step == "spawn":
        r = d.get("result")
        if not r:
            return None, "failed"
        if r["allAnnouncedMs"] is None:
            pending = f', {r["pendingInputs"]} announces queued as pending inputs' if r.get("pendingInputs") else ""
            return None, (f'{r["distinctChildren"]} of {r["spawns"]} announced within {r["timeoutS"]:.0f} s '
                          f'({r["turnsDone"]} spawn turns done, {r["errors"]} failed{pending})')
        return r["allAnnouncedMs"], (f'{r["allAnnouncedMs"] / 1000:.2f} s ({r["distinctChildren"]} announced, '
                                     f'turns done after {r["allTurnsMs"] / 1000:.2f} s)')
    counted = rows.get(step + ".rows", {}).get(gw, {}).get("rows")
    return latency(d, counted if step + ".rows" in rows else None)


def main():
    path = sys.argv[1]
    markdown = "--markdown" in sys.argv
    rows = load(path)
    table = [
        ("Cold start → ready (hello-ok + health), new store", "ready"),
        ("Idle RSS, new store", "idle"),
        ("`health`", "health"),
        ("`sessions.list {}`, new store", "sessions.list"),
        ("`sessions.list {limit:200}`, new store", "sessions.list.200"),
        ("`chat.history {limit:50}`, new store", "chat.history"),
        ("First turn after start", "first-turn"),
        ("Turn (`chat.send` + `agent.wait`), warm", "warm-turns"),
        ("`sessions_send` with wait, through a tool call (whole turn)", "send"),
        ("Turns of many sessions in parallel (PARALLEL, PAR_TURNS)", "parallel-turns"),
        ("RSS after those workloads", "rss-after"),
        ("Burst of spawns until all announced", "spawn"),
        ("RSS after the burst", "rss-after-spawn"),
    ]
    for size in ("1k", "10k", "100k"):
        if f"ready.s{size}" in rows:
            table += [
                (f"Cold start → ready, {size} sessions", f"ready.s{size}"),
                (f"Idle RSS, {size} sessions", f"idle.s{size}"),
                (f"`sessions.list {{limit:200}}`, {size} sessions", f"sessions.list.s{size}"),
                (f"RSS after those lists, {size} sessions", f"rss-after.s{size}"),
            ]
    if "ready.history" in rows:
        table += [
            ("`chat.history {limit:50}`, 1k-message session", "chat.history.hist1k"),
            ("`chat.history {limit:50}`, 100k-message session", "chat.history.hist100k"),
            ("Cold start → ready, the big-session store", "ready.history"),
        ]
    out = []
    for title, step in table:
        (a, ta), (b, tb) = (figure(rows, step, gw) for gw in GATEWAYS)
        ratio = f"{b / a:,.0f}×" if a and b and b / a >= 10 else f"{b / a:.1f}×" if a and b else "—"
        out.append((title, ta, tb, ratio, figure(rows, step, "floor")[1]))
    head = ("figure", "switchboard", "reference", "ratio", "floor")
    if markdown:
        print("| Figure | switchboard | reference | ratio | floor |\n|---|---|---|---|---|")
        for r in out:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(r[i]) for r in out + [head]) for i in range(5)]
        for r in [head] + out:
            print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)))
    loads = [f"{when} " + " ".join(f"{x:.2f}" for x in rows[f"load.{when}"]["machine"]["loadavg"])
             for when in ("start", "end") if f"load.{when}" in rows]
    if loads:  # after a blank line: in Markdown, a line right under a table is one of its rows
        print("\nthe machine's load averages (1, 5, 15 min): " + "; ".join(loads))


if __name__ == "__main__":
    main()
