#!/usr/bin/env bash
# What one turn costs on PostgreSQL, counted, beside SQLite's CPU for the same turns
# (BENCHMARKS.md, issue 38 point 7): one gateway, the bench kit's mock model, TURNS turns
# (`chat.send` + `agent.wait`) over CONC sessions in parallel, after WARM turns.
#   - PostgreSQL counts its statements (pg_stat_statements, BEGIN/COMMIT included) and its
#     commits (pg_stat_database.xact_commit) and the WAL its statements wrote over the measured
#     turns; heartbeats included;
#   - CPU per turn: the gateway's utime+stime, and every process of this script's own cluster
#     (the postmaster and its children), from /proc.
# The statements are listed per turn, most called first, and the rows each table took a turn:
# inserted, updated (and of those, HOT: written without touching an index), deleted
# (pg_stat_user_tables; STATEMENTS=0 leaves both lists out).
# ROUNDS rounds (default 3) alternate the two stores, each round on new gateways, a new state
# directory and a new PostgreSQL schema; the last line gives each round's ratio of PostgreSQL's
# total CPU to SQLite's and their median (the machine's load moves either figure by ±15% from one
# run to the next, so one pair decides nothing).
#
#   bench/pg_turn.sh            # SKIP_BUILD=1 to use the built binary (CARGO_TARGET_DIR picks it)
#
# Environment as for runtime.sh (BENCH_DIR, BENCH_KIT, KEEP_STATE=1), and TURNS (default 1000),
# CONC (default 8), WARM (default 50), GATEWAYS (PostgreSQL gateways, default 1), ROUNDS, MOCK_PORT,
# MOCK_KEEP_ALIVE=1 (the mock keeps its connections, as a provider does) or MOCK_ONE_WRITE=1 (kept,
# each answer in one write from an event loop; both lib.sh's start_mock),
# and for a closer look at the cluster: PG_LIBS (its shared_preload_libraries, default
# pg_stat_statements; add auto_explain to log each statement's plan), PG_EXTRA (more server
# options, e.g. "-c auto_explain.log_min_duration=0 -c auto_explain.log_analyze=on"),
# KEEP_PGLOG=FILE (the server's log is copied there at the end), PG_AFTER_WARM (SQL run in the
# round's schema after the warm-up, for experiments: an index dropped, a setting changed).
set -euo pipefail

TURNS=${TURNS:-1000}
CONC=${CONC:-8}
WARM=${WARM:-50}
GATEWAYS=${GATEWAYS:-1}
STATEMENTS=${STATEMENTS:-1}
ROUNDS=${ROUNDS:-3}
MOCK_PORT=${MOCK_PORT:-18996}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=()

eval "$(SWITCHBOARD_PG_OPTIONS="-c shared_preload_libraries=${PG_LIBS:-pg_stat_statements} -c pg_stat_statements.track_planning=on ${PG_EXTRA:-}" \
    "$ROOT/.ci/postgres" 2>"$RUN/cluster.txt")"
URL=$SWITCHBOARD_TEST_DATABASE_URL
PGDIR=$(grep -o '/tmp/switchboard-pg\.[A-Za-z0-9]*' "$RUN/cluster.txt" | head -n1)
stop_cluster() {
    local run=()
    [[ $(id -u) == 0 ]] && run=(runuser -u postgres --)
    "${run[@]}" "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/pg_ctl" -D "$PGDIR/data" -m fast stop >/dev/null 2>&1 || true
    if [[ -n ${KEEP_PGLOG:-} ]]; then cp "$PGDIR/server.log" "$KEEP_PGLOG"; fi
    rm -rf "$PGDIR"
}
trap 'cleanup; stop_cluster' EXIT
start_mock "$MOCK_PORT"
psql -qAtX "$URL" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null

config() { store_config "$1" "$URL" "bench_r$2"; }

cpu_ms() { awk '{print ($14 + $15) * 10}' "/proc/$1/stat" 2>/dev/null || echo 0; }
pg_cpu_ms() { # this cluster's postmaster and its children
    local main total=0 pid
    main=$(head -n1 "$PGDIR/data/postmaster.pid")
    for pid in "$main" $(pgrep -P "$main" || true); do total=$((total + $(cpu_ms "$pid"))); done
    echo "$total"
}
pg_by_process() { # each process of the cluster: pid, CPU ms, its kind (its title, client port cut off)
    local main pid
    main=$(head -n1 "$PGDIR/data/postmaster.pid")
    for pid in "$main" $(pgrep -P "$main" || true); do
        echo "$pid $(cpu_ms "$pid") $(tr '\0' ' ' <"/proc/$pid/cmdline" | sed -E 's/ [0-9.]+\([0-9]+\).*//; s/ +$//; s/ /_/g')"
    done
}
# by_kind BEFORE AFTER: the CPU each kind of process used between the two listings, and how many
# processes of that kind ran (a process that started in between counts from zero)
by_kind() {
    python3 - "$1" "$2" <<'PY'
import sys
before = {l.split()[0]: int(l.split()[1]) for l in open(sys.argv[1]) if l.strip()}
kinds = {}
for line in open(sys.argv[2]):
    if not line.strip():
        continue
    pid, cpu, kind = line.split(maxsplit=2)
    ms, n = kinds.get(kind.strip(), (0, 0))
    kinds[kind.strip()] = (ms + int(cpu) - before.get(pid, 0), n + 1)
for kind, (ms, n) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
    print("   cluster CPU %6d ms over %2d process(es): %s" % (ms, n, kind.replace("_", " ")))
PY
}
sql() { psql -qAtX -F ' ' "$URL" -c "$1"; }
# tables: each table's rows inserted, updated, updated HOT and deleted so far
tables() { sql "SELECT schemaname || '.' || relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables"; }
# rows_per_turn BEFORE AFTER TURNS: what the turns between two `tables` listings wrote, a turn
rows_per_turn() {
    python3 - "$1" "$2" "$3" <<'PY'
import sys
def read(path):
    return {l.split()[0]: [int(x) for x in l.split()[1:]] for l in open(path) if l.strip()}
before, after, turns = read(sys.argv[1]), read(sys.argv[2]), int(sys.argv[3])
for table, counts in sorted(after.items()):
    d = [(a - b) / turns for a, b in zip(counts, before.get(table, [0] * 4))]
    if any(round(x, 2) for x in d):
        print("%-24s ins %.2f  upd %.2f  hot %.2f  del %.2f" % (table, *d))
PY
}
commits() { sql "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"; }

# measure KIND N ROUND: N gateways on KIND; one JSON line; the statements per turn in
# $RUN/statements-KIND-N.txt and, with STATEMENTS=1 in the last round, each table's rows a turn
# in $RUN/tables-KIND-N.txt
measure() {
    local kind=$1 n=$2 round=$3 i cfg gws=() urls=() tokens=() outs=() gw0=0 gw1=0 pg0=0 pg1=0 c0=0 c1=0
    local ok=$((TURNS / n * n)) listed=0
    # The statements and the tables' rows are printed for the last round only.
    [[ $kind == postgres && $STATEMENTS == 1 && $round == "$ROUNDS" ]] && listed=1
    cfg=$(config "$kind" "$round")
    for i in $(seq 1 "$n"); do
        mkdir -p "$RUN/state-$kind-$round-$i"; CLEANUP_DIRS+=("$RUN/state-$kind-$round-$i")
        GW_ARGS=(--config "$cfg"); start_gateway "$RUN/state-$kind-$round-$i"
        gws+=("$GW_PID"); urls+=("$GW_URL"); tokens+=("$GW_TOKEN")
    done
    for i in $(seq 0 $((n - 1))); do
        python3 "$CLIENT" --url "${urls[$i]}" --token "${tokens[$i]}" turn --session-key "t-$i" \
            --repeat "$WARM" --concurrency "$CONC" >/dev/null
    done
    # A backend hands its row counts to the shared statistics at most once a second, and an idle
    # one that has just done so waits 10 s: the warm-up's counts are in after 11 s.
    if ((listed)); then sleep 11; tables >"$RUN/tables0"; fi
    if [[ $kind == postgres ]]; then
        if [[ -n ${PG_AFTER_WARM:-} ]]; then sql "SET search_path = bench_r$round; ${PG_AFTER_WARM}" >/dev/null; fi
        sleep 0.5
        sql "SELECT pg_stat_statements_reset()" >/dev/null
        pg0=$(pg_cpu_ms); c0=$(commits); pg_by_process >"$RUN/procs0"
    fi
    for pid in "${gws[@]}"; do gw0=$((gw0 + $(cpu_ms "$pid"))); done
    for i in $(seq 0 $((n - 1))); do
        python3 "$CLIENT" --url "${urls[$i]}" --token "${tokens[$i]}" turn --session-key "t-$i" \
            --repeat $((TURNS / n)) --concurrency "$CONC" >"$RUN/turns-$kind-$i.json" &
        outs+=("$!")
    done
    wait "${outs[@]}"
    for pid in "${gws[@]}"; do gw1=$((gw1 + $(cpu_ms "$pid"))); done
    local statements=0 wal=0 rows=''
    if [[ $kind == postgres ]]; then
        pg1=$(pg_cpu_ms); c1=$(commits); pg_by_process >"$RUN/procs1"
        by_kind "$RUN/procs0" "$RUN/procs1" >"$RUN/processes-$kind-$n.txt"
        read -r statements wal < <(sql "SELECT sum(calls), sum(wal_bytes) FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_stat_database%'")
        sql "SELECT round(calls::numeric / $ok, 2), round(mean_exec_time::numeric * 1000) || ' µs', round(mean_plan_time::numeric * 1000) || ' µs plan', plans, 'writes ' || coalesce(nullif(array_to_string(ARRAY(SELECT trim(m[1]) FROM regexp_matches(query, '(INSERT INTO \w+|UPDATE \w+ |FOR (?:NO KEY )?(?:UPDATE|SHARE)|ON CONFLICT)', 'g') AS m), ', '), ''), 'nothing') || ': ' || regexp_replace(left(query, 120), '\s+', ' ', 'g') FROM pg_stat_statements
             WHERE query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_stat_database%' AND calls >= $ok / 20
             ORDER BY calls DESC" >"$RUN/statements-$kind-$n.txt"
    fi
    for pid in "${gws[@]}"; do kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    if ((listed)); then
        sleep 1 # the gateways' backends hand their last counts over as they exit
        tables >"$RUN/tables1"
        rows_per_turn "$RUN/tables0" "$RUN/tables1" "$ok" >"$RUN/tables-$kind-$n.txt"
    fi
    python3 - "$kind" "$n" "$RUN" "$round" $((gw1 - gw0)) $((pg1 - pg0)) "$statements" $((c1 - c0)) "$wal" <<'PY' | tee -a "$RESULTS"
import json, sys
kind, n, run, round_ = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
gw, pg, statements, commits, wal = (int(float(x or 0)) for x in sys.argv[5:10])
parts = [json.load(open(f"{run}/turns-{kind}-{i}.json")) for i in range(n)]
ok = sum(p["ok"] for p in parts)
wall = max(p["wallMs"] for p in parts) / 1000
row = {"store": kind, "round": round_, "gateways": n, "turns": ok, "errors": sum(p["errors"] for p in parts),
       "turnsPerSecond": round(ok / wall), "gatewayCpuMsPerTurn": round(gw / ok, 3)}
if kind == "postgres":
    row |= {"postgresCpuMsPerTurn": round(pg / ok, 3), "totalCpuMsPerTurn": round((gw + pg) / ok, 3),
            "statementsPerTurn": round(statements / ok, 2), "commitsPerTurn": round(commits / ok, 2),
            "walBytesPerTurn": round(wal / ok)}
print(json.dumps(row))
PY
    if ((listed)); then
        echo "   statements per turn, most called first (calls, mean execution, mean planning, plans, the rows it writes or locks):"
        sed 's/^/     /' "$RUN/statements-$kind-$n.txt"
        cat "$RUN/processes-$kind-$n.txt"
        echo "   rows a turn, by table (inserted, updated, of which HOT: no index written; deleted):"
        sed 's/^/     /' "$RUN/tables-$kind-$n.txt"
    fi
}

for round in $(seq 1 "$ROUNDS"); do
    measure sqlite 1 "$round"
    measure postgres "$GATEWAYS" "$round"
done
python3 - "$RESULTS" <<'PY' | tee -a "$RESULTS"
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if '"store"' in line]
sqlite = {r["round"]: r["gatewayCpuMsPerTurn"] for r in rows if r["store"] == "sqlite"}
ratios = [round(r["totalCpuMsPerTurn"] / sqlite[r["round"]], 2)
          for r in rows if r["store"] == "postgres" and sqlite.get(r["round"])]
print(json.dumps({"postgresToSqliteCpu": ratios, "median": statistics.median(ratios) if ratios else None}))
PY
echo "== load after the run: $(cut -d' ' -f1-3 /proc/loadavg); results: $RESULTS"
