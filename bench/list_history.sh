#!/usr/bin/env bash
# What `sessions.list {limit:200}` over 10,000 sessions and `chat.history {limit:50}` of a
# 1,000-message session cost the gateway (BENCHMARKS.md, issue 38 point 4), on one seeded store:
# - instructions per call counted with callgrind: (Ir at LONG calls − Ir at SHORT calls) /
#   (LONG − SHORT) over one WebSocket (the bench kit's client), so start-up and shutdown cancel
#   out; the LONG run's callgrind file is kept for `callgrind_annotate` (ANNOTATE=1 prints the
#   top of it);
# - without valgrind, the call's p50 at the client, the answer's size, and the gateway's CPU per
#   call (its utime + stime from /proc over WALL calls).
# Needs valgrind; loopback only.
#
#   bench/list_history.sh
#   SKIP_BUILD=1 BENCH_BIN=target/profiling/switchboard bench/list_history.sh   # with symbols
#
# Environment: BENCH_DIR, BENCH_KIT, SKIP_BUILD=1, BENCH_BIN, KEEP_STATE=1 as for foundation.sh, and
#   SHORT / LONG   the two call counts of the instruction count (default 20 / 120)
#   WALL           calls of the wall-clock measure (default 2000)
#   SESSIONS       sessions seeded (default 10000, 4 messages each)
#   SETTLE         seconds to wait after a start before the first call (default 30), so the
#                  start's background check of the mirror files is over and not counted
set -euo pipefail

SHORT=${SHORT:-20}
LONG=${LONG:-120}
WALL=${WALL:-2000}
SESSIONS=${SESSIONS:-10000}
SETTLE=${SETTLE:-30}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
STORE="$RUN/store"
CLEANUP_DIRS=("$STORE")
BIG=hist1k-000000

echo "== seeding $SESSIONS sessions and a 1,000-message session"
"$BIN" --state-dir "$STORE" dev seed --sessions "$SESSIONS" --messages-per-session 4 >/dev/null
"$BIN" --state-dir "$STORE" dev seed --big-session "$BIG" --big-messages 1000 >/dev/null
echo '{ agents: { defaults: { model: "builtin/echo" } } }' >"$RUN/config.json5"

# gateway [WRAPPER...]: starts the gateway on the store (under WRAPPER), sets PID and URL.
gateway() {
    GW_ARGS=(--config "$RUN/config.json5")
    start_gateway "$STORE" "$@"
    PID=$GW_PID URL=$GW_URL
    sleep "$SETTLE"
}

stop() {
    kill -TERM "$PID"
    wait "$PID" 2>/dev/null || true
}

# calls METHOD PARAMS N [FLAGS...]: N calls over one WebSocket.
calls() {
    python3 "$CLIENT" --url "$URL" --token "$(cat "$STORE/gateway-token")" call "$1" "$2" --repeat "$3" "${@:4}"
}

# instructions NAME METHOD PARAMS N: the gateway's total Ir for N calls.
instructions() {
    local out="$RUN/$1-$4.callgrind"
    gateway valgrind --tool=callgrind --callgrind-out-file="$out"
    calls "$2" "$3" "$4" --timeout-ms 120000 >/dev/null
    stop
    awk '/^(summary|totals):/ {print $2; exit}' "$out"
}


# wall METHOD PARAMS FIELD: "p50_ms cpu_us_per_call rows bytes" over WALL calls (after 50 to
# warm up); bytes = the result's compact JSON.
wall() {
    local before after p50 shape
    gateway
    shape=$(calls "$1" "$2" 1 --print | python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; print(len(r[sys.argv[1]]), len(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()))' "$3")
    calls "$1" "$2" 50 >/dev/null
    before=$(cpu_ticks "$PID")
    p50=$(calls "$1" "$2" "$WALL" | python3 -c 'import json,sys; print(json.load(sys.stdin)["latencyMs"]["p50"])')
    after=$(cpu_ticks "$PID")
    stop
    echo "$p50 $(( (after - before) * 1000000 / $(getconf CLK_TCK) / WALL )) $shape"
}

# measure NAME METHOD PARAMS FIELD
measure() {
    local short long rows bytes p50 cpu
    short=$(instructions "$1" "$2" "$3" "$SHORT")
    long=$(instructions "$1" "$2" "$3" "$LONG")
    read -r p50 cpu rows bytes < <(wall "$2" "$3" "$4")
    emit "{\"bench\":\"list_history\",\"step\":\"$1\",\"rows\":$rows,\"bytes\":$bytes,\"ir_short\":$short,\"ir_long\":$long,\"ir_per_call\":$(( (long - short) / (LONG - SHORT) )),\"p50_ms\":$p50,\"cpu_us_per_call\":$cpu}"
    if [[ "${ANNOTATE:-0}" == 1 ]]; then
        { callgrind_annotate --inclusive=yes "$RUN/$1-$LONG.callgrind" 2>/dev/null | head -n 60; } || true
    fi
}

measure sessions.list sessions.list '{"limit":200}' sessions
measure chat.history chat.history "{\"sessionKey\":\"agent:main:$BIG\",\"limit\":50}" messages
echo "callgrind files: $RUN/*.callgrind"
