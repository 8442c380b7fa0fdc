#!/usr/bin/env python3
"""Agent workloads for the side-by-side benchmark (bench/compare.sh), run the same way against
either gateway over the bench kit's Python client. The model is bench/tool_mock.py: a user message
`@tool NAME {JSON}` makes it call that tool, so every tool call below is a real one, made by the
gateway's agent loop on the model's request.

  agent_load.py --kit KIT --url U --token T send  [--n 20]
  agent_load.py --kit KIT --url U --token T spawn [--n 1000] [--requesters 50] [--timeout-s 300]

send:  for each sample i, a warm-up turn creates agent:main:bench-target-i, then the measured turn
       in agent:main:bench-caller-i asks the model for `sessions_send` to it with a wait
       (timeoutSeconds 30). A sample counts when the target's transcript then holds the message.
       Fresh pairs keep one sample's reply-back and announce steps from queueing the next one,
       and before the next sample both transcripts must stay unchanged for --settle-s (default
       1 s): the reply-back loop and the announce (six more model calls by default) run in the
       background after the timed turn, and measured back to back they ran inside the next
       sample's timed turn, on the same cores and the same mock model, adding several turns'
       worth to it on either gateway.
       --model-timing FILE (tool_mock.py's --timing file) also gives, per sample, the time the
       model's calls took inside the timed turn (their union, clipped to it) and the rest: the
       gateway's share ("beyondModelMs"), with the loopback's transit counted in it.
spawn: N turns spread over R requester sessions (agent:main:bench-spawner-w, one connection each),
       each asking the model for one `sessions_spawn`, timed from the first turn until every child
       has announced back into its requester (counted from the requesters' transcripts, one
       announce per distinct child). Stops at --timeout-s and reports how many had announced.
Prints one JSON line.
"""
import argparse
import json
import os
import sys
import threading
import time
import uuid


def announces(messages):
    """Child session keys of the sub-agent announces among these transcript messages.

    switchboard marks them `provenance.kind == "subagent-announce"`; the reference gateway runs
    them as requester runs whose id is `announce:v1:<child session key>:<child run id>`.
    """
    children = []
    for m in messages:
        provenance = m.get("provenance") or {}
        if provenance.get("kind") == "subagent-announce":
            children.append(provenance.get("fromSessionKey"))
            continue
        run_id = (m.get("__openclaw") or {}).get("runId") or ""
        if m.get("role") == "assistant" and run_id.startswith("announce:v1:"):
            children.append(run_id[len("announce:v1:"):].rsplit(":", 1)[0])
    return children


def model_calls(path):
    """The model calls tool_mock.py --timing logged: (start, end) in epoch seconds, sorted."""
    with open(path, encoding="utf-8") as f:
        return sorted((c["t0"], c["t1"]) for c in map(json.loads, f) if c)


def inside(calls, w0, w1):
    """Seconds of [w0, w1] during which at least one of the sorted calls was running."""
    total, reach = 0.0, w0
    for a, b in calls:
        a, b = max(a, reach), min(b, w1)
        if b > a:
            total += b - a
            reach = b
    return total


def text_in(messages, needle):
    return any(needle in json.dumps(m.get("content")) for m in messages)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kit", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("workload", choices=["send", "spawn"])
    ap.add_argument("--n", type=int)
    ap.add_argument("--requesters", type=int, default=50)
    ap.add_argument("--timeout-s", type=float, default=300)
    ap.add_argument("--settle-s", type=float, default=1.0)
    ap.add_argument("--model-timing", default=None)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.abspath(args.kit), "client"))
    from gw_client import Gw, GwError, stats

    def turn(gw, key, message, timeout_ms=120000):
        sent = gw.call("chat.send", {"sessionKey": key, "message": message,
                                     "idempotencyKey": str(uuid.uuid4())}, timeout_ms=timeout_ms)
        waited = gw.call("agent.wait", {"runId": sent["runId"], "timeoutMs": timeout_ms},
                         timeout_ms=timeout_ms + 10000)
        if waited.get("status") not in (None, "ok"):
            raise RuntimeError("run ended %s" % waited.get("status"))

    def history(gw, key, limit):
        return gw.call("chat.history", {"sessionKey": key, "limit": limit}).get("messages") or []

    def poll(gw, key, limit):
        """history(), or None while the gateway asks to retry (the reference answers
        `UNAVAILABLE: session history is rebuilding` under load) or is too busy to answer."""
        try:
            return history(gw, key, limit)
        except (GwError, TimeoutError):
            return None

    def settle(gw, keys):
        """Waits until the sessions' transcripts stay unchanged for --settle-s (at most
        --timeout-s): the sample's background steps are over."""
        seen, quiet_since, t0 = None, time.perf_counter(), time.perf_counter()
        while time.perf_counter() - t0 < args.timeout_s:
            counts = [poll(gw, key, 200) for key in keys]
            now = [None if c is None else len(c) for c in counts]
            if now != seen or None in now:
                seen, quiet_since = now, time.perf_counter()
            elif time.perf_counter() - quiet_since >= args.settle_s:
                return
            time.sleep(0.1)

    if args.workload == "send":
        n = args.n or 20
        gw = Gw(args.url, args.token)
        times, windows, errors = [], [], {}
        for i in range(n):
            target, caller = "agent:main:bench-target-%d" % i, "agent:main:bench-caller-%d" % i
            marker = "ping %s" % uuid.uuid4().hex[:8]
            call = {"sessionKey": target, "message": marker, "timeoutSeconds": 30}
            try:
                turn(gw, target, "hello")
                w0, t0 = time.time(), time.perf_counter()
                turn(gw, caller, "@tool sessions_send " + json.dumps(call))
                elapsed = (time.perf_counter() - t0) * 1000
                w1 = time.time()
                if not text_in(history(gw, target, 20), marker):
                    raise RuntimeError("the target's transcript lacks the sent message")
                times.append(elapsed)
                windows.append((w0, w1, elapsed))
                settle(gw, [target, caller])
            except Exception as e:  # counted and reported; the run goes on
                errors[str(e)[:120]] = errors.get(str(e)[:120], 0) + 1
        gw.close()
        out = {"workload": "send", "ok": len(times), "errors": sum(errors.values()),
               "errorMessages": errors, "latencyMs": stats(times)}
        if args.model_timing:
            calls = model_calls(args.model_timing)
            model = [inside(calls, w0, w1) * 1000 for w0, w1, _ in windows]
            out["modelMs"] = stats(model)
            out["modelCallsPerSample"] = stats([sum(1 for a, b in calls if a < w1 and b > w0)
                                                for w0, w1, _ in windows])
            out["beyondModelMs"] = stats([ms - m for (_, _, ms), m in zip(windows, model)])
        print(json.dumps(out), flush=True)
        return 0 if not errors else 1

    n, r = args.n or 1000, min(args.requesters, args.n or 1000)
    requesters = ["agent:main:bench-spawner-%d" % w for w in range(r)]
    lock = threading.Lock()
    state = {"next": 0, "errors": {}}
    done = {k: 0 for k in requesters}  # turns that ended ok, per requester
    t0 = time.perf_counter()

    def worker(key):
        gw = Gw(args.url, args.token)
        try:
            while True:
                with lock:
                    if state["next"] >= n:
                        return
                    state["next"] += 1
                    i = state["next"]
                try:
                    turn(gw, key, "@tool sessions_spawn " + json.dumps({"task": "child task %d" % i}))
                    with lock:
                        done[key] += 1
                except Exception as e:
                    with lock:
                        state["errors"][str(e)[:120]] = state["errors"].get(str(e)[:120], 0) + 1
                if time.perf_counter() - t0 > args.timeout_s:
                    return
        finally:
            gw.close()

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in requesters]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, args.timeout_s - (time.perf_counter() - t0)))
    turns_ms = round((time.perf_counter() - t0) * 1000)
    poller = Gw(args.url, args.token)
    turns_done = sum(done.values())
    children = {k: [] for k in requesters}  # announce messages, by the child they name
    all_ms = None
    while True:
        for key in requesters:  # only those still owed an announce
            if len(set(children[key])) < done[key]:
                messages = poll(poller, key, 1000)
                if messages is not None:
                    children[key] = announces(messages)
        finished = sum(min(len(set(children[k])), done[k]) for k in requesters)
        if turns_done == n and finished == n:
            all_ms = round((time.perf_counter() - t0) * 1000)
            break
        if time.perf_counter() - t0 > args.timeout_s:
            break
        time.sleep(0.2)
    # The reference queues an announce it cannot hand to a busy requester as a pending input of
    # that session (`chat.history` shows them); count those that are still waiting.
    pending = 0
    for key in requesters:
        try:
            pending += len(poller.call("chat.history", {"sessionKey": key, "limit": 1}).get("pendingInputs") or [])
        except (GwError, TimeoutError):
            pass
    poller.close()
    every = [c for cs in children.values() for c in cs]
    print(json.dumps({"workload": "spawn", "spawns": n, "turnsDone": turns_done,
                      "errors": sum(state["errors"].values()), "errorMessages": state["errors"],
                      "allTurnsMs": turns_ms, "allAnnouncedMs": all_ms, "announces": len(every),
                      "distinctChildren": len(set(every)), "pendingInputs": pending,
                      "timeoutS": args.timeout_s}), flush=True)
    return 0 if all_ms is not None and not state["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
