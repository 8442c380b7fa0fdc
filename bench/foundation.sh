#!/usr/bin/env bash
# The foundation benchmark (BENCHMARKS.md): cold start, idle RSS and sessions.list at 10k and 100k
# sessions, chat.history on a 100k-message session. Loopback only; a few minutes on 2 cores.
#
#   bench/foundation.sh                 build the release binary, run everything
#
# Environment:
#   BENCH_DIR    where state dirs and logs go (default /tmp/switchboard-bench); each run uses a
#                new folder under it and keeps its results and logs there
#   BENCH_KIT    the reference bench kit (default: ../shared/bench next to the repository)
#   SKIP_BUILD=1 use the binary already built
#   COLD_RUNS    cold starts per scenario (default 10)
#   REPEAT       requests per latency figure (default 200)
#   KEEP_STATE=1 keep the seeded state dirs (about 0.6 GB) instead of removing them at the end
#
# Prints a readable summary at the end and one JSON line per figure as it goes (also written to
# <run dir>/results.jsonl, next to the gateway logs). Every gateway it starts is stopped on exit.
set -euo pipefail

COLD_RUNS=${COLD_RUNS:-10}
REPEAT=${REPEAT:-200}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLEANUP_DIRS=("$RUN/cold-empty" "$RUN/s10k" "$RUN/s100k" "$RUN/big")

# seed LABEL DIR ARGS…: fill DIR with `switchboard dev seed`, record the seed time.
seed() {
    local label=$1 dir=$2
    shift 2
    echo "== seeding $label"
    local out
    out=$("$BIN" --state-dir "$dir" --json dev seed "$@" 2>>"$dir.seed.log")
    emit "$(python3 -c 'import json,sys; d=json.loads(sys.argv[2]); d={"figure":"seed","store":sys.argv[1],**d}; print(json.dumps(d))' "$label" "$out")"
}

# latency LABEL METHOD PARAMS: warm up, then REPEAT sequential calls; one JSON line.
latency() {
    local label=$1 method=$2 params=$3
    python3 "$CLIENT" --url "$GW_URL" --token "$GW_TOKEN" call "$method" "$params" --repeat 20 >/dev/null
    local out bytes
    out=$(python3 "$CLIENT" --url "$GW_URL" --token "$GW_TOKEN" call "$method" "$params" --repeat "$REPEAT")
    bytes=$(response_bytes "$method" "$params")
    emit "$(python3 -c 'import json,sys; d=json.loads(sys.argv[2]); d.pop("url",None); print(json.dumps({"figure":d["method"],"store":sys.argv[1],"params":json.loads(sys.argv[3]),"responseBytes":int(sys.argv[4]),**d}))' "$label" "$out" "$params" "$bytes")"
}

# Size of one response payload as JSON text (what the client decodes per call).
response_bytes() {
    python3 - "$KIT" "$GW_URL" "$GW_TOKEN" "$1" "$2" <<'EOF'
import json, os, sys
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(sys.argv[1], "client"))
import gw_client
gw = gw_client.Gw(sys.argv[2], sys.argv[3])
print(len(json.dumps(gw.call(sys.argv[4], json.loads(sys.argv[5])), separators=(",", ":"))))
gw.close()
EOF
}

rss_now() {
    local label=$1
    emit "$(python3 -c 'import json,sys
kib={l.split(":")[0]: int(l.split()[1]) for l in open("/proc/%s/status" % sys.argv[2]) if l.startswith(("VmRSS","VmHWM"))}
print(json.dumps({"figure":"rss_after_load","store":sys.argv[1],"rssMiB":round(kib["VmRSS"]/1024,1),"hwmMiB":round(kib["VmHWM"]/1024,1)}))' "$label" "$GW_PID")"
}

# cold_start DIR LABEL [--fresh]: COLD_RUNS starts, then idle RSS 2 s after the last one's list.
cold_start() {
    local out line
    out=$(python3 "$ROOT/bench/cold_start.py" --bin "$BIN" --state-dir "$1" --label "$2" ${3:-} \
        --runs "$COLD_RUNS" --rss-after-s 2 --kit "$KIT")
    while read -r line; do emit "$line"; done <<<"$out"
}

uptime_load() { cut -d' ' -f1-3 /proc/loadavg; }

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load $(uptime_load)"

# 1. Cold start and idle RSS, empty store (a new state dir per start).
echo "== cold start, empty store ($COLD_RUNS starts)"
cold_start "$RUN/cold-empty" empty --fresh

# 2. 10k sessions: cold start (restart over the store), idle RSS, sessions.list.
S10K="$RUN/s10k"
seed 10k "$S10K" --sessions 10000
echo "== cold start, 10k sessions ($COLD_RUNS starts)"
cold_start "$S10K" 10k
echo "== sessions.list, 10k sessions"
start_gateway "$S10K"
latency 10k health '{}'   # per-agent session counts and the five most recent (the reference's shape)
latency 10k sessions.list '{"limit":200}'
latency 10k sessions.list '{}'
rss_now 10k
stop_gateway

# 3. 100k sessions: cold start (restart over the store), idle RSS, sessions.list.
S100K="$RUN/s100k"
seed 100k "$S100K" --sessions 100000
echo "== cold start, 100k sessions ($COLD_RUNS starts)"
cold_start "$S100K" 100k
echo "== sessions.list, 100k sessions"
start_gateway "$S100K"
latency 100k health '{}'
latency 100k sessions.list '{"limit":200}'
latency 100k sessions.list '{}'
rss_now 100k
stop_gateway

# 4. One session with 100k messages: chat.history.
BIG="$RUN/big"
seed big-100k "$BIG" --big-session bench-big --big-messages 100000
echo "== chat.history, 100k-message session"
start_gateway "$BIG"
latency big-100k chat.history '{"sessionKey":"agent:main:bench-big","limit":50}'
latency big-100k chat.history '{"sessionKey":"agent:main:bench-big","limit":50,"before":50000}'
rss_now big-100k
stop_gateway

echo "== load after the run: $(uptime_load)"
echo
python3 - "$RESULTS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("%-28s %-9s %s" % ("figure", "store", "value"))
for r in rows:
    f = r["figure"]
    if f == "seed":
        parts = []
        if r.get("sessions"):
            parts.append("%d sessions / %d messages in %.2f s" % (r["sessions"]["sessions"], r["sessions"]["messages"], r["sessions"]["ms"] / 1000))
        if r.get("bigSession"):
            parts.append("%d messages in one session in %.2f s" % (r["bigSession"]["messages"], r["bigSession"]["ms"] / 1000))
        print("%-28s %-9s %s (total %.2f s)" % ("seed", r["store"], "; ".join(parts), r["totalMs"] / 1000))
    elif f == "cold_start":
        m = r["readyMs"]
        print("%-28s %-9s p50 %.1f ms (min %.1f, p90 %.1f, max %.1f; n=%d; listening p50 %.1f ms)" % (
            "cold start -> sessions.list", r["store"], m["p50"], m["min"], m["p90"], m["max"], m["n"], r["listenMs"]["p50"]))
    elif f in ("idle_rss", "rss_after_load"):
        name = "idle RSS (+%gs)" % r["afterS"] if f == "idle_rss" else "RSS after the calls"
        print("%-28s %-9s %.1f MiB (peak %.1f MiB)" % (name, r["store"], r["rssMiB"], r["hwmMiB"]))
    else:
        l = r["latencyMs"]
        print("%-28s %-9s p50 %.2f / p90 %.2f / p99 %.2f ms (n=%d, errors %d, %d-byte response) %s" % (
            f, r["store"], l["p50"], l["p90"], l["p99"], l["n"], r["errors"], r["responseBytes"], json.dumps(r["params"])))
EOF
echo
echo "results: $RESULTS"
