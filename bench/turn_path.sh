#!/usr/bin/env bash
# What a warm `builtin/echo` turn costs the gateway, for several builds side by side in one run
# (BENCHMARKS.md, issue 38 point 5). For each build, in rounds that interleave the builds:
# - instructions per turn counted with callgrind: (Ir at LONG turns − Ir at SHORT turns) /
#   (LONG − SHORT) over one WebSocket (the bench kit's client, `turn --repeat N`: a `chat.send`
#   and an `agent.wait`), so start-up and shutdown cancel out;
# - without valgrind, the gateway's CPU per turn (utime + stime from /proc over WALL turns, after
#   50 to warm up) and the turn's p50 at the client.
# The default config (metrics on), SQLite. Needs valgrind; loopback only.
#
#   BINS="before=/path/to/switchboard after=/other/switchboard" bench/turn_path.sh
#
# Environment:
#   BINS           name=binary pairs (default: this tree's profiling build, as "this")
#   SHORT / LONG   the two turn counts of the instruction count (default 50 / 250)
#   WALL           turns of the CPU measure (default 2000; 0 skips it)
#   ROUNDS         rounds (default 1)
#   KEEP=DIR       keep each LONG count's callgrind file in DIR (for callgrind_annotate)
#   BENCH_KIT, BENCH_DIR as for foundation.sh
set -euo pipefail

SHORT=${SHORT:-50}
LONG=${LONG:-250}
WALL=${WALL:-2000}
ROUNDS=${ROUNDS:-1}
BINS=${BINS:-this=${CARGO_TARGET_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target}/profiling/switchboard}
# The builds are given: nothing is built; lib.sh checks the first one exists.
first=${BINS%% *}
SKIP_BUILD=1 BENCH_BIN=${first#*=}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=()
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }

# gateway BIN DIR [WRAPPER...]: starts BIN over DIR (under WRAPPER); sets PID and URL.
gateway() {
    local dir=$2
    BIN=$1
    shift 2
    mkdir -p "$dir"
    echo '{ agents: { defaults: { model: "builtin/echo" } } }' >"$dir/config.json5"
    GW_ARGS=(--config "$dir/config.json5")
    start_gateway "$dir" "$@"
    PID=$GW_PID URL=$GW_URL
}

stop() {
    kill -TERM "$PID"
    wait "$PID" 2>/dev/null || true
    PID=""
}

turns() {
    python3 "$CLIENT" --url "$URL" --token "$(cat "$1/gateway-token")" turn \
        --session-key bench --message hi --repeat "$2"
}

# instructions NAME BIN TURNS: the gateway's total Ir over TURNS echo turns.
instructions() {
    local dir="$RUN/$1-$3-$RANDOM"
    gateway "$2" "$dir" valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out"
    turns "$dir" "$3" >/dev/null
    stop
    awk '/^(summary|totals):/ {print $2; exit}' "$dir/callgrind.out"
    if [[ -n "${KEEP:-}" && "$3" == "$LONG" ]]; then
        mkdir -p "$KEEP"
        cp "$dir/callgrind.out" "$KEEP/callgrind.$1.$LONG.out"
    fi
    rm -rf "$dir"
}

# wall NAME BIN: "p50_ms cpu_us_per_turn" over WALL turns (after 50 to warm up).
wall() {
    local dir="$RUN/$1-wall-$RANDOM" before after p50
    gateway "$2" "$dir"
    turns "$dir" 50 >/dev/null
    before=$(awk '{print $14 + $15}' "/proc/$PID/stat")
    p50=$(turns "$dir" "$WALL" | python3 -c 'import json,sys; print(json.load(sys.stdin)["latencyMs"]["p50"])')
    after=$(awk '{print $14 + $15}' "/proc/$PID/stat")
    stop
    rm -rf "$dir"
    echo "$p50 $(((after - before) * 1000000 / $(getconf CLK_TCK) / WALL))"
}

for round in $(seq 1 "$ROUNDS"); do
    for pair in $BINS; do
        name=${pair%%=*}
        bin=${pair#*=}
        short=$(instructions "$name" "$bin" "$SHORT")
        long=$(instructions "$name" "$bin" "$LONG")
        p50=null cpu=null
        [[ "$WALL" -gt 0 ]] && read -r p50 cpu < <(wall "$name" "$bin")
        echo "{\"bench\":\"turn_path\",\"round\":$round,\"build\":\"$name\",\"ir_short\":$short,\"ir_long\":$long,\"ir_per_turn\":$(((long - short) / (LONG - SHORT))),\"turn_p50_ms\":$p50,\"cpu_us_per_turn\":$cpu}"
    done
done
