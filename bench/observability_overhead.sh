#!/usr/bin/env bash
# What metrics and traces cost a turn (BENCHMARKS.md, issue 36), side by side in one run, four
# ways: both off, metrics on (the default), traces on (`observability.otlp` to a loopback sink,
# bench/otlp_sink.py, that drops what it gets), both on. For each:
# - instructions per `builtin/echo` turn counted with callgrind: (Ir at LONG turns − Ir at SHORT
#   turns) / (LONG − SHORT) over one WebSocket (the bench kit's client), so start-up and shutdown
#   cancel out;
# - without valgrind, the turn's p50 at the client and the gateway's CPU per turn (its utime +
#   stime from /proc over WALL turns).
# Needs valgrind; loopback only.
#
#   bench/observability_overhead.sh
#
# Environment: BENCH_DIR, BENCH_KIT, SKIP_BUILD=1, KEEP_STATE=1 as for foundation.sh, and
#   SHORT / LONG   the two turn counts of the instruction count (default 50 / 250)
#   WALL           turns of the wall-clock measure (default 2000)
#   ROUNDS         how many times each mode is measured (default 1)
#   MODES          which of off, metrics, traces, both, unsampled (traces with sampleRatio 0:
#                  the layer's own cost) to measure (default "off metrics traces both")
set -euo pipefail

SHORT=${SHORT:-50}
LONG=${LONG:-250}
ROUNDS=${ROUNDS:-1}
WALL=${WALL:-2000}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=()
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }

SINK_PORT=""
start_sink() {
    local log="$RUN/sink.port"
    python3 "$(dirname "${BASH_SOURCE[0]}")/otlp_sink.py" >"$log" &
    PIDS+=("$!")
    for _ in $(seq 1 100); do
        SINK_PORT=$(head -n1 "$log" 2>/dev/null) && [[ -n "$SINK_PORT" ]] && return
        sleep 0.1
    done
    echo "the OTLP sink did not start" >&2
    exit 1
}

# config MODE DIR: the gateway's config for MODE (off, metrics, traces, both).
config() {
    local metrics=false otlp=""
    [[ $1 == metrics || $1 == both ]] && metrics=true
    [[ $1 == traces || $1 == both ]] && otlp=", otlp: { endpoint: \"http://127.0.0.1:$SINK_PORT\" }"
    [[ $1 == unsampled ]] && otlp=", otlp: { endpoint: \"http://127.0.0.1:$SINK_PORT\", sampleRatio: 0 }"
    cat >"$2/config.json5" <<EOF5
{ agents: { defaults: { model: "builtin/echo" } }, observability: { metrics: { enabled: $metrics }$otlp } }
EOF5
}

# gateway DIR [WRAPPER...]: starts the gateway in DIR (under WRAPPER), sets PID and URL.
gateway() {
    local dir=$1
    shift
    GW_ARGS=(--config "$dir/config.json5")
    start_gateway "$dir" "$@"
    PID=$GW_PID URL=$GW_URL
}

turns() {
    python3 "$CLIENT" --url "$URL" --token "$(cat "$1/gateway-token")" turn \
        --session-key bench --message hi --repeat "$2"
}

# instructions MODE TURNS: the gateway's total Ir for TURNS echo turns.
instructions() {
    local dir="$RUN/$1-$2-$RANDOM"
    mkdir -p "$dir"
    config "$1" "$dir"
    gateway "$dir" valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out"
    turns "$dir" "$2" >/dev/null
    kill -TERM "$PID"
    wait "$PID" 2>/dev/null || true
    awk '/^(summary|totals):/ {print $2; exit}' "$dir/callgrind.out"
    [[ "${KEEP_STATE:-0}" == 1 ]] || rm -rf "$dir"
}


# wall MODE: "p50_ms cpu_us_per_turn" over WALL turns (after 50 to warm up).
wall() {
    local dir="$RUN/$1-wall-$RANDOM" before after p50
    mkdir -p "$dir"
    config "$1" "$dir"
    gateway "$dir"
    turns "$dir" 50 >/dev/null
    before=$(cpu_ticks "$PID")
    p50=$(turns "$dir" "$WALL" | python3 -c 'import json,sys; print(json.load(sys.stdin)["latencyMs"]["p50"])')
    after=$(cpu_ticks "$PID")
    kill -TERM "$PID"
    wait "$PID" 2>/dev/null || true
    [[ "${KEEP_STATE:-0}" == 1 ]] || rm -rf "$dir"
    echo "$p50 $(( (after - before) * 1000000 / $(getconf CLK_TCK) / WALL ))"
}

start_sink
for round in $(seq 1 "$ROUNDS"); do
    for mode in ${MODES:-off metrics traces both}; do
        short=$(instructions "$mode" "$SHORT")
        long=$(instructions "$mode" "$LONG")
        per_turn=$(( (long - short) / (LONG - SHORT) ))
        read -r p50 cpu < <(wall "$mode")
        emit "{\"bench\":\"observability_overhead\",\"round\":$round,\"mode\":\"$mode\",\"ir_short\":$short,\"ir_long\":$long,\"ir_per_turn\":$per_turn,\"turn_p50_ms\":$p50,\"cpu_us_per_turn\":$cpu}"
    done
done
