#!/usr/bin/env bash
# The scale-out benchmark (BENCHMARKS.md, docs/scale-out.md), side by side in one run:
#   - 1 gateway on SQLite (the embedded default),
#   - 1, 2 and 3 gateways on one PostgreSQL,
# each measured for turns per second (PAR_TURNS turns over PARALLEL sessions in parallel, the
# mock model over HTTP, the load spread evenly over the gateways) and for `sessions.list`
# (limit 50) on a store holding SESSIONS sessions. Loopback only.
#
#   bench/scale_out.sh
#
# PostgreSQL: BENCH_DATABASE_URL when set, else a throw-away cluster from .ci/postgres (Debian's
# postgresql package). Environment as for runtime.sh (BENCH_DIR, BENCH_KIT, SKIP_BUILD=1,
# KEEP_STATE=1), and
#   SESSIONS     sessions in each store for sessions.list (default 100000)
#   PARALLEL     sessions in parallel (default 96, a multiple of 1, 2 and 3)
#   PAR_TURNS    turns per figure (default 1800)
#   LISTS        sessions.list calls per figure (default 200)
#   MOCK_PORT    port of the mock model (default 18997)
set -euo pipefail

SESSIONS=${SESSIONS:-100000}
PARALLEL=${PARALLEL:-96}
PAR_TURNS=${PAR_TURNS:-1800}
LISTS=${LISTS:-200}
MOCK_PORT=${MOCK_PORT:-18997}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=()

if [[ -z "${BENCH_DATABASE_URL:-}" ]]; then
    eval "$(SWITCHBOARD_PG_OPTIONS="-c shared_preload_libraries=pg_stat_statements" "$ROOT/.ci/postgres")"
    BENCH_DATABASE_URL=$SWITCHBOARD_TEST_DATABASE_URL
fi
start_mock "$MOCK_PORT"

# config KIND: the config file of a gateway on KIND (sqlite | postgres).
config() { store_config "$1" "$BENCH_DATABASE_URL" "bench_$$"; }

cpu_ms() { awk '{print ($14 + $15) * 10}' "/proc/$1/stat"; }
# What PostgreSQL did, counted by pg_stat_statements where the server loads it (else nothing):
# pg_counts reset | pg_counts read → "statements WAL-bytes blocks-dirtied blocks-touched".
pg_counts() {
    local sql="SELECT pg_stat_statements_reset()"
    [[ $1 == read ]] && sql="SELECT sum(calls), sum(wal_bytes), sum(shared_blks_dirtied), sum(shared_blks_hit + shared_blks_read) FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'"
    psql -qAtX -F ' ' "$BENCH_DATABASE_URL" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" -c "$sql" 2>/dev/null | tail -1 || true
}
pg_cpu_ms() { # every postgres process of the cluster (the server and its backends)
    local total=0 pid
    for pid in $(pgrep -x postgres || true); do total=$((total + $(cpu_ms "$pid" 2>/dev/null || echo 0))); done
    echo "$total"
}

# measure LABEL N: N gateways are up (URLS, TOKENS, GW_PIDS); one JSON line with turns/s over
# all of them, sessions.list latency through the first, and where the CPU went.
measure() {
    local label=$1 n=$2 i outs=() before_gw=0 after_gw=0 before_pg after_pg
    for i in $(seq 0 $((n - 1))); do
        python3 "$CLIENT" --url "${URLS[$i]}" --token "${TOKENS[$i]}" turn --session-key "warm-$label-$i" --repeat 20 >/dev/null
    done
    for pid in "${GW_PIDS[@]}"; do before_gw=$((before_gw + $(cpu_ms "$pid"))); done
    before_pg=$(pg_cpu_ms)
    [[ $label != sqlite ]] && pg_counts reset >/dev/null
    for i in $(seq 0 $((n - 1))); do
        python3 "$CLIENT" --url "${URLS[$i]}" --token "${TOKENS[$i]}" turn --session-key "par-$label-$i" \
            --repeat $((PAR_TURNS / n)) --concurrency $((PARALLEL / n)) >"$RUN/turns-$label-$i.json" &
        outs+=("$!")
    done
    wait "${outs[@]}"
    for pid in "${GW_PIDS[@]}"; do after_gw=$((after_gw + $(cpu_ms "$pid"))); done
    after_pg=$(pg_cpu_ms)
    local counts=''
    [[ $label != sqlite ]] && counts=$(pg_counts read)
    python3 "$CLIENT" --url "${URLS[0]}" --token "${TOKENS[0]}" call sessions.list '{"limit":50}' --repeat 20 >/dev/null
    python3 "$CLIENT" --url "${URLS[0]}" --token "${TOKENS[0]}" call sessions.list '{"limit":50}' --repeat "$LISTS" >"$RUN/list-$label.json"
    emit "$(python3 - "$label" "$n" "$RUN" $((after_gw - before_gw)) $((after_pg - before_pg)) "$counts" <<'PY'
import json, sys
label, n, run, gw_cpu, pg_cpu = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
counts = [float(c) for c in sys.argv[6].split()] if len(sys.argv[6].split()) == 4 else None
parts = [json.load(open(f"{run}/turns-{label}-{i}.json")) for i in range(n)]
ok = sum(p["ok"] for p in parts); errors = sum(p["errors"] for p in parts)
wall = max(p["wallMs"] for p in parts) / 1000
lst = json.load(open(f"{run}/list-{label}.json"))
print(json.dumps({"figure": label, "gateways": n, "turns": ok, "errors": errors,
                  "turnsPerSecond": round(ok / wall), "turnP50Ms": max(p["latencyMs"]["p50"] for p in parts),
                  "gatewayCpuMsPerTurn": round(gw_cpu / max(ok, 1), 2),
                  "postgresCpuMsPerTurn": round(pg_cpu / max(ok, 1), 2) if label != "sqlite" else 0,
                  "listP50Ms": lst["latencyMs"]["p50"], "listP99Ms": lst["latencyMs"]["p99"],
                  "postgresPerTurn": counts and dict(zip(["statements", "walBytes", "blocksDirtied", "blocksTouched"],
                                                         [round(c / max(ok, 1), 1) for c in counts]))}))
PY
)"
}

# start N KIND: N gateways on KIND, each on its own state dir.
start() {
    local n=$1 kind=$2 i cfg
    cfg=$(config "$kind")
    URLS=(); TOKENS=(); GW_PIDS=()
    for i in $(seq 0 $((n - 1))); do
        mkdir -p "$RUN/state-$kind-$n-$i"
        CLEANUP_DIRS+=("$RUN/state-$kind-$n-$i")
        GW_ARGS=(--config "$cfg")
        start_gateway "$RUN/state-$kind-$n-$i"
        URLS+=("$GW_URL"); TOKENS+=("$GW_TOKEN"); GW_PIDS+=("$GW_PID")
    done
}
stop_all() { local pid; for pid in "${GW_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; }

echo "== seeding $SESSIONS sessions into SQLite and into PostgreSQL"
mkdir -p "$RUN/state-sqlite-1-0" "$RUN/state-seed"
CLEANUP_DIRS+=("$RUN/state-sqlite-1-0" "$RUN/state-seed")
"$BIN" --state-dir "$RUN/state-sqlite-1-0" --config "$(config sqlite)" dev seed --sessions "$SESSIONS" --messages-per-session 2 >/dev/null
"$BIN" --state-dir "$RUN/state-seed" --config "$(config postgres)" dev seed --sessions "$SESSIONS" --messages-per-session 2 >/dev/null

echo "== 1 gateway on SQLite"
start 1 sqlite; measure sqlite 1; stop_all
for n in 1 2 3; do
    echo "== $n gateway(s) on PostgreSQL"
    start "$n" postgres; measure "postgres-$n" "$n"; stop_all
done
echo "== load after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 - "$RESULTS" <<'PY'
import json, sys
print(f'{"store":<14}{"gateways":>9}{"turns/s":>9}{"turn p50":>10}{"gw CPU/turn":>13}{"pg CPU/turn":>13}{"list p50":>10}{"list p99":>10}')
for line in open(sys.argv[1]):
    d = json.loads(line)
    c = d.get("postgresPerTurn") or {}
    per_turn = "  per turn: " + ", ".join(f"{v} {k}" for k, v in c.items()) if c else ""
    print(f'{d["figure"]:<14}{d["gateways"]:>9}{d["turnsPerSecond"]:>9}{d["turnP50Ms"]:>8} ms{d["gatewayCpuMsPerTurn"]:>10} ms{d["postgresCpuMsPerTurn"]:>10} ms{d["listP50Ms"]:>7} ms{d["listP99Ms"]:>7} ms{per_turn}')
PY
echo "results: $RESULTS"
