#!/usr/bin/env bash
# Side by side with the reference gateway (OpenClaw, installed by the bench kit): every workload of
# BENCHMARKS.md against both gateways in one run, with the same model server (bench/tool_mock.py,
# the kit's instant mock plus tool calls), the same client (the kit's Python client) and the same
# workload, printed as one table. Loopback only. The timed blocks run on our own load client,
# `switchboard bench` (docs/benchmarks.md), beside its floor: a do-nothing protocol-v4 server.
#
#   bench/compare.sh
#
# Phases (PHASES, default "interleaved fresh spawn sizes"), each run on both gateways:
#   interleaved  both gateways up at once on new stores: `switchboard bench` in ROUNDS interleaved
#           rounds over them and the floor: health, sessions.list {limit:200}, chat.history
#           {limit:50}, warm turns, sessions_send through a real tool call, PARALLEL sessions ×
#           PAR_TURNS turns in parallel; p50/p99 and each gateway's CPU per operation
#   fresh   a new empty store, the reference first: ready + idle RSS, what the bench client does
#           not do (the kit's Python client: sessions.list {}, the first turn after start), RSS after
#   spawn   a new empty store: a burst of agent turns that each spawn one sub-agent, until all
#           have announced back (`switchboard bench --workloads spawn`, beside the floor)
#   sizes   stores of 1k / 10k / 100k sessions (4 messages each): ready, idle RSS, sessions.list
#           {limit:200}; a store with a 1k- and a 100k-message session: chat.history {limit:50}
#           (both with `switchboard bench`, beside a floor whose answers have the same sizes)
#   stores  (not in the default) only build the reference's stores that the sizes phase uses
#   million (not in the default; switchboard only) stores of MILLION_SIZES sessions side by side
#           with bench/million.py: ready (median of 5 starts), idle RSS, sessions.list
#           {limit:200}, chat.history {limit:50}, in ROUNDS rounds of alternating batches, the
#           gateway not measured held still; each round's last line has the ratios (issue 59
#           point 6). The stores are seeded once and kept under $BENCH_HOME/stores (a million
#           takes about 8 minutes and 5.7 GB); the rounds' turns add messages to them (21 turns a
#           round for each of MILLION_CALLS: 10,500 at 500, in random seeded sessions)
# The reference's big stores are written with the kit's gen_sessions.py and imported with its
# `doctor --session-sqlite import` once, then kept under $BENCH_HOME/stores (the 100k import
# takes about 20 minutes the first time). Ours are seeded with `switchboard dev seed` each run.
#
# Environment: BENCH_DIR, BENCH_KIT, SKIP_BUILD=1, KEEP_STATE=1 as for foundation.sh, and
#   PHASES            the phases to run (default "interleaved fresh spawn sizes")
#   ROUNDS            interleaved rounds (default 3)
#   GATEWAYS          the gateways to run (default "reference switchboard"). GATEWAYS=switchboard
#                     skips every reference step: the install, its stores, its start and stop and
#                     its measurements (the table shows "not run" in its column; the stores phase
#                     then does nothing)
#   SKIP_INSTALL=1    do not run the kit's install.sh (it is idempotent anyway)
#   PARALLEL, PAR_TURNS  the parallel block (default 100 sessions, 1000 turns over them)
#   SENDS             sessions_send samples per round (default 20)
#   SPAWNS, SPAWN_REQUESTERS, SPAWN_TIMEOUT_S   the burst (default 1000 spawns from 50 sessions, 300 s)
#   SIZES             store sizes (default "1000 10000 100000"); switchboard's stores also give a
#                     seeded session's `chat.history {limit:50}`
#   REF_SIZES         the sizes the reference is run at (default "1000 10000 100000"; its import
#                     of a million sessions would take hours)
#   IDLE_S            seconds between ready and the idle RSS reading (default 15)
#   MILLION_SIZES     the million phase's store sizes, the smaller first (default "10000 1000000")
#   MILLION_CALLS     the million phase's calls of each kind a batch, 10 batches a round, with
#                     21 turns a round for each (default 500: a history page costs 40–100 µs of
#                     CPU, read in 10 ms ticks, so a batch of 100 pages read as 0 or 10 ms, and
#                     a round's 4 to 8 ticks a store made 40 µs against 80 µs by chance)
#   OC_PORT, MOCK_PORT  the reference gateway's and the model server's ports (18789, 18998)
#   MOCK_KEEP_ALIVE   1 (default): the model server keeps its connections, as a provider does;
#                     0: it closes each streamed reply's, as the kit's mock does (runs before
#                     2026-11-30)
#   MOCK_ONE_WRITE    1: the model server answers from an event loop, each answer in one write
#                     (bench/tool_mock.py --one-write; connections kept): the same answers at a
#                     fraction of the kit server's own time a call (default 0, the kit's server)
set -euo pipefail

PHASES=${PHASES:-interleaved fresh spawn sizes}
ROUNDS=${ROUNDS:-3}
GATEWAYS=${GATEWAYS:-reference switchboard}
PARALLEL=${PARALLEL:-100}
PAR_TURNS=${PAR_TURNS:-1000}
SENDS=${SENDS:-20}
SPAWNS=${SPAWNS:-1000}
SPAWN_REQUESTERS=${SPAWN_REQUESTERS:-50}
SPAWN_TIMEOUT_S=${SPAWN_TIMEOUT_S:-300}
SIZES=${SIZES:-1000 10000 100000}
REF_SIZES=${REF_SIZES:-1000 10000 100000}
IDLE_S=${IDLE_S:-15}
MILLION_SIZES=${MILLION_SIZES:-10000 1000000}
MILLION_CALLS=${MILLION_CALLS:-500}
OC_PORT=${OC_PORT:-18789}
MOCK_PORT=${MOCK_PORT:-18998}
MOCK_KEEP_ALIVE=${MOCK_KEEP_ALIVE:-1}
MOCK_ONE_WRITE=${MOCK_ONE_WRITE:-0}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=("$RUN/ours")
mkdir -p "$RUN/ours"
BENCH_HOME=${BENCH_HOME:-$HOME/.cache/switchboard-bench}
OC_VERSION=${OC_VERSION:-2026.9.6}
# The big session: 50,000 turns, 100,000 messages (its events get unique ids before the import,
# see bench/unique_event_ids.py).
BIG_TURNS=${BIG_TURNS:-50000}
export BENCH_HOME OC_VERSION
listening() { python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.3).close()' "$1" 2>/dev/null; }
phase() { [[ " $PHASES " == *" $1 "* ]]; }
gateway() { [[ " $GATEWAYS " == *" $1 "* ]]; }
for gw in $GATEWAYS; do
    [[ $gw == reference || $gw == switchboard ]] || { echo "unknown gateway in GATEWAYS: $gw" >&2; exit 1; }
done
# The reference runs from a private copy of the kit's scripts, whose config template also turns
# its memory plugin off: its background reindex once ran for a minute inside a timed block (issue
# 38). `plugins.entries.<id>.enabled: false` blocks a plugin outright (the reference's
# docs/tools/plugin.md): the gateway then starts 13 plugins, memory-core not among them. The kit
# itself stays untouched.
REF_KIT="$RUN/kit"
if gateway reference; then
    trap '"$REF_KIT/openclaw/stop.sh" --port "$OC_PORT" >/dev/null 2>&1 || true; cleanup' EXIT
    [[ "${SKIP_INSTALL:-0}" == 1 ]] || "$KIT/openclaw/install.sh" >"$RUN/install.log" 2>&1
    mkdir -p "$REF_KIT" && cp -r "$KIT/openclaw" "$KIT/client" "$KIT/mock_llm.py" "$REF_KIT/"
    for template in "$REF_KIT"/openclaw/config-*.json5; do
        sed -i 's/"memory-core": { config: { dreaming: { enabled: false } } }/"memory-core": { enabled: false }/' "$template"
    done
    grep -q '"memory-core": { enabled: false' "$REF_KIT/openclaw/config-$OC_VERSION.json5" 2>/dev/null \
        || grep -q '"memory-core": { enabled: false' "$REF_KIT/openclaw/config-2026.9.6.json5" \
        || { echo "could not turn the reference's memory plugin off in its config" >&2; exit 1; }
fi

echo "== model server: bench/tool_mock.py on $MOCK_PORT ($GATEWAYS)"
listening "$MOCK_PORT" && { echo "port $MOCK_PORT is taken; set MOCK_PORT" >&2; exit 1; }
mock_flags=()
[[ $MOCK_KEEP_ALIVE == 1 ]] && mock_flags=(--keep-alive)
[[ $MOCK_ONE_WRITE == 1 ]] && mock_flags=(--one-write)
python3 "$ROOT/bench/tool_mock.py" --kit "$KIT" --port "$MOCK_PORT" "${mock_flags[@]}" >"$RUN/mock.log" 2>&1 &
PIDS+=("$!")
until listening "$MOCK_PORT"; do sleep 0.05; done

# record STEP GATEWAY JSON-OBJECT: one result line, tagged with its step and gateway.
record() {
    emit "$(python3 -c 'import json,sys; d=json.loads(sys.argv[3]); d.update(step=sys.argv[1], gateway=sys.argv[2]); print(json.dumps(d))' "$1" "$2" "$3")"
}

# record_load WHEN: the machine's load averages (1, 5 and 15 minutes) as a result line, so that
# every run's figures keep the load they were taken at (issue 59 point 7).
record_load() {
    record "load.$1" machine "{\"loadavg\": [$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',')]}"
}

rss_mib() { # PID: the process and its descendants
    local total=0 p rss
    for p in "$1" $(pgrep -P "$1" || true); do
        rss=$(awk '/^VmRSS/{print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
        total=$((total + ${rss:-0}))
    done
    awk "BEGIN{printf \"%.1f\", $total/1024}"
}

# measure LABEL GATEWAY CMD...: run one client command, record its JSON line (null if it failed).
measure() {
    local step=$1 gw=$2 out
    shift 2
    out=$("$@" 2>>"$RUN/client.err") || true
    record "$step" "$gw" "{\"result\": ${out:-null}}"
}
client() { python3 "$CLIENT" --url "$URL" --token "$TOKEN" "$@"; }

# bench_steps [KEY=STEP ...] -- BENCH-ARGS...: `switchboard bench` with these targets and the
# floor; its table goes to the log and each summary line is recorded under its workload's step
# (the default names below, or KEY=STEP) for its target ("floor" for the floor).
bench_steps() {
    local names=(health=health list=sessions.list.200 history=chat.history turn=warm-turns
                 parallel=parallel-turns send=send spawn=spawn) out="$RUN/bench-$(date +%s%N)"
    while [[ $1 != -- ]]; do names+=("$1"); shift; done
    shift
    "$BIN" bench "$@" --target floor --out "$out.jsonl" >"$out.md" 2>>"$RUN/bench.err" || true
    cat "$out.md"
    [[ -s "$out.jsonl" ]] || { echo "switchboard bench failed; see $RUN/bench.err" >&2; return 0; }
    python3 -c '
import json, sys
names = dict(n.split("=", 1) for n in sys.argv[2:])
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("summary"):
        print(json.dumps({"bench": d, "step": names[d["key"]], "gateway": d["target"]}))
' "$out.jsonl" "${names[@]}" | while read -r line; do emit "$line"; done
}
# this_target NAME: the running gateway as a bench target.
this_target() { echo "$1=$URL,token=$TOKEN,pid=$GPID"; }

# rows GATEWAY STEP METHOD PARAMS FIELD: record how many rows one call returns (a sanity check
# that both gateways answered the same question).
rows() {
    local n
    n=$(client call "$3" "$4" --print | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["result"][sys.argv[1]]))' "$5" || echo null)
    record "$2.rows" "$1" "{\"rows\": $n}"
}

# --- starting and stopping the two gateways; each sets URL, TOKEN, GPID and READY_MS

ref_start() { # STATE-DIR [--fresh]
    local out="$RUN/reference-$(date +%s%N).start"
    "$REF_KIT/openclaw/start.sh" --state "$1" "${@:2}" --port "$OC_PORT" --mock-port "$MOCK_PORT" --no-mock \
        --timeout-s 1800 >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
    READY_MS=$(sed -n 's/.*ready after \([0-9]*\) ms.*/\1/p' "$out" | head -n1)
    URL=$(awk '$1 == "url" {print $2; exit}' "$out")
    TOKEN=$(awk '$1 == "token" {print $2; exit}' "$out")
    GPID=$(awk '$1 == "pid" {print $2; exit}' "$out")
    REF_PID=$GPID
}
# The bench stops the gateways it does not measure (SIGSTOP); one it left stopped goes on first.
ref_stop() {
    if [[ -n "${REF_PID:-}" ]]; then kill -CONT "$REF_PID" 2>/dev/null || true; fi
    "$REF_KIT/openclaw/stop.sh" --port "$OC_PORT" >/dev/null 2>&1 || true
    REF_PID=
}

cat >"$RUN/config.json5" <<EOF5
{
  models: { providers: { mock: { api: "openai-completions", baseUrl: "http://127.0.0.1:$MOCK_PORT/v1",
                                 models: [{ id: "mock-model" }] } } },
  agents: { defaults: { model: "mock/mock-model", maxConcurrent: 16 } },
  gateway: { auth: { token: "bench-token-0123456789" } },
}
EOF5
our_start() { # STATE-DIR: ready = spawn → hello-ok + health (bench/launch.py)
    local port started
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    URL="ws://127.0.0.1:$port" TOKEN=bench-token-0123456789
    started=$(python3 "$ROOT/bench/launch.py" --kit "$KIT" --port "$port" --token "$TOKEN" --out "$1.out" \
        --err "$1.err" -- "$BIN" --state-dir "$1" --config "$RUN/config.json5" gateway --port "$port") \
        || { cat "$1.err" >&2; exit 1; }
    GPID=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["pid"])' "$started")
    READY_MS=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["readyMs"])' "$started")
    PIDS+=("$GPID")
}
our_stop() { # not a child of this shell (launch.py started it): wait for it to go
    kill -CONT "$GPID" 2>/dev/null || true
    kill -TERM "$GPID" 2>/dev/null || true
    while kill -0 "$GPID" 2>/dev/null; do sleep 0.05; done
}

# ready GATEWAY STEP: record the ready time and the RSS IDLE_S seconds later.
ready() {
    sleep "$IDLE_S"
    record "$2" "$1" "{\"readyMs\": $READY_MS, \"idleRssMiB\": $(rss_mib "$GPID"), \"idleAfterS\": $IDLE_S}"
}

# --- phases; each takes the gateway's label and a function that starts it on a new empty store

fresh() { # GATEWAY: what `switchboard bench` does not do, with the kit's Python client
    local gw=$1
    measure sessions.list "$gw" client call sessions.list '{}' --repeat 50
    measure first-turn "$gw" client turn --session-key agent:main:main --message "first turn"
    record rss-after "$gw" "{\"rssMiB\": $(rss_mib "$GPID")}"
}

spawn_burst() { # GATEWAY
    bench_steps -- --target "$(this_target "$1")" --workloads spawn --rounds 1 --spawns "$SPAWNS" \
        --spawn-requesters "$SPAWN_REQUESTERS" --spawn-timeout-s "$SPAWN_TIMEOUT_S"
    record rss-after-spawn "$1" "{\"rssMiB\": $(rss_mib "$GPID")}"
}

# sizes_on GATEWAY NAME: the store is up; measure listing or history on it.
sizes_on() {
    local gw=$1 name=$2
    ready "$gw" "ready.$name"
    if [[ $name == history ]]; then
        local k
        for k in hist1k hist100k; do
            rows "$gw" "chat.history.$k" chat.history "{\"sessionKey\":\"agent:main:$k-000000\",\"limit\":50}" messages
            bench_steps "history=chat.history.$k" -- --target "$(this_target "$gw")" --workloads history \
                --rounds 1 --calls 50 --history-session "agent:main:$k-000000"
        done
    else
        rows "$gw" "sessions.list.$name" sessions.list '{"limit":200}' sessions
        bench_steps "list=sessions.list.$name" -- --target "$(this_target "$gw")" --workloads list \
            --rounds 1 --calls 50
        # A seeded session's history in the big store: its own index, whatever the store's size.
        if [[ $gw == switchboard ]]; then
            rows "$gw" "chat.history.$name" chat.history '{"sessionKey":"agent:main:bench-000000","limit":50}' messages
            bench_steps "history=chat.history.$name" -- --target "$(this_target "$gw")" --workloads history \
                --rounds 1 --calls 50 --history-session agent:main:bench-000000
        fi
    fi
    record "rss-after.$name" "$gw" "{\"rssMiB\": $(rss_mib "$GPID")}"
}

# ref_store NAME GEN-ARGS...: the reference's store NAME, built once (gen_sessions.py runs, each
# with its own arguments, separated by "--", then the offline import) and kept in BENCH_HOME;
# sets STORE.
ref_store() {
    local name=$1 dir="$BENCH_HOME/stores/openclaw-$OC_VERSION-$1"
    shift
    STORE=$dir
    [[ -f "$dir/.bench-store-complete" ]] && return 0
    echo "   building the reference's $name store (once; kept in $dir)"
    # Built in place: the store records its own paths. The marker file makes it complete.
    rm -rf "$dir" && mkdir -p "$dir"
    ref_start "$dir" --fresh && ref_stop # writes the config and the empty state
    local gen=() t0=$SECONDS
    for arg in "$@" --; do
        if [[ $arg == -- ]]; then
            python3 "$KIT/gen_sessions.py" "$dir" "${gen[@]}" --merge >>"$RUN/store-$name.log"
            gen=()
        else
            gen+=("$arg")
        fi
    done
    python3 "$ROOT/bench/unique_event_ids.py" "$dir"
    "$REF_KIT/openclaw/cli.sh" --port "$OC_PORT" --state "$dir" -- doctor --session-sqlite import \
        --session-sqlite-all-agents >>"$RUN/store-$name.log" 2>&1
    echo "gen_sessions.py $* and the import in $((SECONDS - t0)) s" >"$dir/.bench-store-complete"
}

record_load start
record mock machine "{\"keepAlive\": $MOCK_KEEP_ALIVE, \"oneWrite\": $MOCK_ONE_WRITE}"

if phase stores && ! gateway reference; then
    echo "== stores: skipped (only the reference's stores; GATEWAYS=$GATEWAYS)"
elif phase stores; then # only build the reference's stores (the sizes phase builds what is missing)
    for n in $SIZES; do ref_store "s$((n / 1000))k" --count "$n" --turns 2; done
    ref_store history --count 1 --turns 500 --prefix hist1k -- --count 1 --turns "$BIG_TURNS" --prefix hist100k
fi

if phase interleaved; then
    echo "== interleaved: $GATEWAYS and the floor, $ROUNDS rounds"
    targets=()
    if gateway reference; then
        ref_start "$BENCH_HOME/state/compare-interleaved" --fresh
        targets+=(--target "$(this_target reference)")
    fi
    if gateway switchboard; then
        our_start "$RUN/ours/interleaved"
        targets+=(--target "$(this_target switchboard)")
    fi
    bench_steps -- "${targets[@]}" --rounds "$ROUNDS" --workloads health,list,history,turn,parallel,send \
        --parallel "$PARALLEL" --parallel-turns "$PAR_TURNS" --sends "$SENDS" --turn-session agent:main:main
    if gateway switchboard; then our_stop; fi
    if gateway reference; then ref_stop; fi
fi

if phase fresh && gateway reference; then
    echo "== fresh store: reference"
    ref_start "$BENCH_HOME/state/compare-fresh" --fresh
    ready reference ready
    fresh reference
    ref_stop
fi
if phase fresh && gateway switchboard; then
    echo "== fresh store: switchboard"
    our_start "$RUN/ours/fresh"
    ready switchboard ready
    fresh switchboard
    our_stop
fi

if phase spawn && gateway reference; then
    echo "== spawn burst: reference"
    ref_start "$BENCH_HOME/state/compare-spawn" --fresh
    spawn_burst reference
    ref_stop
fi
if phase spawn && gateway switchboard; then
    echo "== spawn burst: switchboard"
    our_start "$RUN/ours/spawn"
    spawn_burst switchboard
    our_stop
fi

if phase sizes; then
    for n in $SIZES; do
        name="s$((n / 1000))k"
        if gateway reference && [[ " $REF_SIZES " == *" $n "* ]]; then
            echo "== $n sessions: reference"
            ref_store "$name" --count "$n" --turns 2
            ref_start "$STORE"
            sizes_on reference "$name"
            ref_stop
        fi
        gateway switchboard || continue
        echo "== $n sessions: switchboard"
        "$BIN" --state-dir "$RUN/ours/$name" dev seed --sessions "$n" --messages-per-session 4 >/dev/null
        our_start "$RUN/ours/$name"
        sizes_on switchboard "$name"
        our_stop
        rm -rf "$RUN/ours/$name"
    done
    if gateway reference; then
        echo "== 1k- and 100k-message sessions: reference"
        ref_store history --count 1 --turns 500 --prefix hist1k -- --count 1 --turns "$BIG_TURNS" --prefix hist100k
        ref_start "$STORE"
        sizes_on reference history
        ref_stop
    fi
    if gateway switchboard; then
        echo "== 1k- and 100k-message sessions: switchboard"
        "$BIN" --state-dir "$RUN/ours/history" dev seed --big-session hist1k-000000 --big-messages 1000 >/dev/null
        "$BIN" --state-dir "$RUN/ours/history" dev seed --big-session hist100k-000000 --big-messages $((BIG_TURNS * 2)) >/dev/null
        our_start "$RUN/ours/history"
        sizes_on switchboard history
        our_stop
    fi
fi

if phase million && gateway switchboard; then
    echo "== stores of $MILLION_SIZES sessions side by side: switchboard (bench/million.py)"
    stores=()
    for n in $MILLION_SIZES; do
        dir="$BENCH_HOME/stores/switchboard-s$n"
        if [[ ! -f "$dir/seeded" ]]; then
            rm -rf "$dir"
            "$BIN" --state-dir "$dir" dev seed --sessions "$n" --messages-per-session 4 >/dev/null
            touch "$dir/seeded"
        fi
        if ((n % 1000000 == 0)); then name="$((n / 1000000))m"; else name="$((n / 1000))k"; fi
        stores+=(--store "$name=$dir")
    done
    python3 "$ROOT/bench/million.py" --bin "$BIN" --kit "$KIT" "${stores[@]}" --rounds "$ROUNDS" \
        --idle-s "$IDLE_S" --calls "$MILLION_CALLS" | tee "$RUN/million.jsonl"
fi

record_load end
grep -qv '"step": "load\.' "$RESULTS" || { echo "results: $RUN"; exit 0; } # the million phase alone
echo
python3 "$ROOT/bench/compare_table.py" "$RESULTS"
echo "results: $RESULTS"
