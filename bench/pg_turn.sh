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
# ROUNDS rounds (default 3), each on new gateways of both stores, a new state directory and a new
# PostgreSQL schema; within a round the two stores take turns in CHUNKS slices (default 10) of
# TURNS/CHUNKS turns each, so that both are measured over the same minutes (the machine's speed
# moves either figure by ±15% from one minute to the next: whole rounds one after the other made
# the ratio swing by as much). The last line gives each round's ratio of PostgreSQL's total CPU
# to SQLite's and their median.
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
# round's schema after the warm-up, for experiments: an index dropped, a setting changed),
# PG_COUNT=0 (the cluster without pg_stat_statements) and PG_SOCKET=1 (the gateways connect
# through the cluster's Unix socket instead of its loopback port).
set -euo pipefail

TURNS=${TURNS:-1000}
CONC=${CONC:-8}
WARM=${WARM:-50}
GATEWAYS=${GATEWAYS:-1}
STATEMENTS=${STATEMENTS:-1}
ROUNDS=${ROUNDS:-3}
CHUNKS=${CHUNKS:-10}
MOCK_PORT=${MOCK_PORT:-18996}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=()

# PG_COUNT=0 runs the cluster as deployed, without pg_stat_statements (whose counting costs the
# cluster CPU of its own): no statements counted or listed, the WAL read from its position.
PG_COUNT=${PG_COUNT:-1}
if [[ $PG_COUNT == 0 && $STATEMENTS == 1 ]]; then echo "STATEMENTS=1 needs PG_COUNT=1" >&2; exit 2; fi
COUNTING="-c shared_preload_libraries=${PG_LIBS:-pg_stat_statements} -c pg_stat_statements.track_planning=on"
[[ $PG_COUNT == 0 ]] && COUNTING=""
eval "$(SWITCHBOARD_PG_OPTIONS="$COUNTING ${PG_EXTRA:-}" \
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
if [[ $PG_COUNT == 1 ]]; then psql -qAtX "$URL" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null; fi

# The gateways' URL: the cluster's loopback TCP port, or with PG_SOCKET=1 its Unix socket (in
# the cluster's directory), as a gateway beside its cluster on one host would connect.
GW_DB_URL=$URL
if [[ ${PG_SOCKET:-0} == 1 ]]; then
    port=${URL##*:}
    GW_DB_URL="postgres://switchboard@${PGDIR//\//%2F}:${port%%/*}/postgres"
fi
config() { store_config "$1" "$GW_DB_URL" "bench_r$2"; }

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

# A round runs both stores' gateways at once and alternates their turns in CHUNKS slices, so that
# both see the machine as it is over the same minutes (its speed moves by ±15% from one minute to
# the next); each store's CPU is counted over the whole round, its idle slices included.
declare -A GWS URLS TOKENS GW0 NGW
PG0=0 C0=0 LSN0='' LISTED=0

# setup KIND N ROUND: N gateways on KIND, started and warmed up
setup() {
    local kind=$1 n=$2 round=$3 i cfg
    NGW[$kind]=$n GWS[$kind]='' URLS[$kind]='' TOKENS[$kind]=''
    cfg=$(config "$kind" "$round")
    for i in $(seq 1 "$n"); do
        mkdir -p "$RUN/state-$kind-$round-$i"; CLEANUP_DIRS+=("$RUN/state-$kind-$round-$i")
        GW_ARGS=(--config "$cfg"); start_gateway "$RUN/state-$kind-$round-$i"
        GWS[$kind]+="$GW_PID " URLS[$kind]+="$GW_URL " TOKENS[$kind]+="$GW_TOKEN "
    done
    drive "$kind" $((WARM * n)) warm # WARM turns on each gateway, as before the slices
}

# drive KIND TURNS NAME: TURNS turns over KIND's gateways, CONC sessions at a time on each; the
# client's summaries in $RUN/turns-KIND-NAME-I.json
drive() {
    local kind=$1 turns=$2 name=$3 i outs=()
    local -a urls=(${URLS[$kind]}) tokens=(${TOKENS[$kind]})
    for i in "${!urls[@]}"; do
        python3 "$CLIENT" --url "${urls[$i]}" --token "${tokens[$i]}" turn --session-key "t-$i" \
            --repeat $((turns / ${#urls[@]})) --concurrency "$CONC" >"$RUN/turns-$kind-$name-$i.json" &
        outs+=("$!")
    done
    wait "${outs[@]}"
}

gateways_cpu() { local pid total=0; for pid in ${GWS[$1]}; do total=$((total + $(cpu_ms "$pid"))); done; echo "$total"; }

# begin ROUND: the counters' values before the measured turns
begin() {
    local round=$1
    # The statements and the tables' rows are printed for the last round only. A backend hands
    # its row counts to the shared statistics at most once a second, and an idle one that has
    # just done so waits 10 s: the warm-up's counts are in after 11 s.
    LISTED=0
    [[ $STATEMENTS == 1 && $round == "$ROUNDS" ]] && LISTED=1
    if ((LISTED)); then sleep 11; tables >"$RUN/tables0"; fi
    if [[ -n ${PG_AFTER_WARM:-} ]]; then sql "SET search_path = bench_r$round; ${PG_AFTER_WARM}" >/dev/null; fi
    sleep 0.5
    if [[ $PG_COUNT == 1 ]]; then sql "SELECT pg_stat_statements_reset()" >/dev/null; fi
    LSN0=$(sql "SELECT pg_current_wal_lsn()")
    PG0=$(pg_cpu_ms); C0=$(commits); pg_by_process >"$RUN/procs0"
    GW0[sqlite]=$(gateways_cpu sqlite); GW0[postgres]=$(gateways_cpu postgres)
}

# finish ROUND: stops the gateways, one JSON line a store; the statements per turn in
# $RUN/statements-postgres-N.txt and, with STATEMENTS=1 in the last round, each table's rows a
# turn in $RUN/tables-postgres-N.txt
finish() {
    local round=$1 n=${NGW[postgres]} kind pid pg1 c1 statements='' wal ok
    local -A gw1
    ok=$((TURNS / CHUNKS / n * n * CHUNKS))
    gw1[sqlite]=$(gateways_cpu sqlite); gw1[postgres]=$(gateways_cpu postgres)
    pg1=$(pg_cpu_ms); c1=$(commits); pg_by_process >"$RUN/procs1"
    by_kind "$RUN/procs0" "$RUN/procs1" >"$RUN/processes-postgres-$n.txt"
    if [[ $PG_COUNT == 0 ]]; then
        wal=$(sql "SELECT pg_current_wal_lsn() - '$LSN0'::pg_lsn")
    else
        read -r statements wal < <(sql "SELECT sum(calls), sum(wal_bytes) FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_stat_database%'")
        sql "SELECT round(calls::numeric / $ok, 2), round(mean_exec_time::numeric * 1000) || ' µs', round(mean_plan_time::numeric * 1000) || ' µs plan', plans, 'writes ' || coalesce(nullif(array_to_string(ARRAY(SELECT trim(m[1]) FROM regexp_matches(query, '(INSERT INTO \w+|UPDATE \w+ |FOR (?:NO KEY )?(?:UPDATE|SHARE)|ON CONFLICT)', 'g') AS m), ', '), ''), 'nothing') || ': ' || regexp_replace(left(query, 120), '\s+', ' ', 'g') FROM pg_stat_statements
             WHERE query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_stat_database%' AND calls >= $ok / 20
             ORDER BY calls DESC" >"$RUN/statements-postgres-$n.txt"
        # each statement's whole text, for a closer look at its plan
        sql "SELECT round(calls::numeric / $ok, 2) || E' a turn:\n' || query || E'\n' FROM pg_stat_statements
             WHERE query NOT LIKE '%pg_stat_statements%' AND calls >= $ok / 20 ORDER BY calls DESC" >"$RUN/statements-postgres-$n.sql"
    fi
    for kind in sqlite postgres; do
        for pid in ${GWS[$kind]}; do kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    done
    if ((LISTED)); then
        sleep 1 # the gateways' backends hand their last counts over as they exit
        tables >"$RUN/tables1"
        rows_per_turn "$RUN/tables0" "$RUN/tables1" "$ok" >"$RUN/tables-postgres-$n.txt"
    fi
    for kind in sqlite postgres; do
        python3 - "$kind" "${NGW[$kind]}" "$RUN" "$round" $((gw1[$kind] - GW0[$kind])) $((pg1 - PG0)) "$statements" $((c1 - C0)) "$wal" "$CHUNKS" <<'PY' | tee -a "$RESULTS"
import glob, json, sys
kind, n, run, round_ = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
counted = sys.argv[7] != ""  # no statements counted without pg_stat_statements (PG_COUNT=0)
gw, pg, statements, commits, wal = (int(float(x or 0)) for x in sys.argv[5:10])
chunks = int(sys.argv[10])
parts = [[json.load(open(f)) for f in glob.glob(f"{run}/turns-{kind}-c{c}-*.json")] for c in range(1, chunks + 1)]
ok = sum(p["ok"] for chunk in parts for p in chunk)
wall = sum(max(p["wallMs"] for p in chunk) for chunk in parts) / 1000
row = {"store": kind, "round": round_, "gateways": n, "chunks": chunks, "turns": ok,
       "errors": sum(p["errors"] for chunk in parts for p in chunk),
       "turnsPerSecond": round(ok / wall), "gatewayCpuMsPerTurn": round(gw / ok, 3)}
if kind == "postgres":
    row |= {"postgresCpuMsPerTurn": round(pg / ok, 3), "totalCpuMsPerTurn": round((gw + pg) / ok, 3),
            "statementsPerTurn": round(statements / ok, 2) if counted else None, "commitsPerTurn": round(commits / ok, 2),
            "walBytesPerTurn": round(wal / ok)}
print(json.dumps(row))
PY
    done
    if ((LISTED)); then
        echo "   statements per turn, most called first (calls, mean execution, mean planning, plans, the rows it writes or locks):"
        sed 's/^/     /' "$RUN/statements-postgres-$n.txt"
        cat "$RUN/processes-postgres-$n.txt"
        echo "   rows a turn, by table (inserted, updated, of which HOT: no index written; deleted):"
        sed 's/^/     /' "$RUN/tables-postgres-$n.txt"
    fi
}

for round in $(seq 1 "$ROUNDS"); do
    setup sqlite 1 "$round"
    setup postgres "$GATEWAYS" "$round"
    begin "$round"
    for c in $(seq 1 "$CHUNKS"); do
        drive sqlite $((TURNS / CHUNKS)) "c$c"
        drive postgres $((TURNS / CHUNKS)) "c$c"
    done
    finish "$round"
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
