#!/usr/bin/env bash
# What the metrics cost a turn (BENCHMARKS.md, issue 36): instructions per `builtin/echo` turn
# counted with callgrind, the gateway with `observability.metrics` on (the default: the
# Prometheus recorder installed) and off (no recorder: the seams record into nothing), side by
# side in one run. The figure is (Ir at 250 turns − Ir at 50 turns) / 200 over one WebSocket
# (the bench kit's client), so start-up and shutdown cancel out. Needs valgrind; loopback only.
#
#   bench/metrics_overhead.sh
#
# Environment: BENCH_DIR, BENCH_KIT, SKIP_BUILD=1, KEEP_STATE=1 as for foundation.sh, and
#   SHORT / LONG   the two turn counts (default 50 / 250)
#   ROUNDS         how many times each build is counted (default 1)
set -euo pipefail

SHORT=${SHORT:-50}
LONG=${LONG:-250}
ROUNDS=${ROUNDS:-1}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=()
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }

# instructions MODE TURNS: the gateway's total Ir for TURNS echo turns, metrics MODE (on/off).
instructions() {
    local mode=$1 turns=$2 dir="$RUN/$1-$2-$RANDOM" enabled=true
    [[ $mode == off ]] && enabled=false
    mkdir -p "$dir"
    cat >"$dir/config.json5" <<EOF5
{ agents: { defaults: { model: "builtin/echo" } }, observability: { metrics: { enabled: $enabled } } }
EOF5
    valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
        "$BIN" --state-dir "$dir" --config "$dir/config.json5" gateway --port 0 \
        >"$dir/out.log" 2>"$dir/err.log" &
    local pid=$! url="" i
    PIDS+=("$pid")
    for i in $(seq 1 1200); do
        url=$(grep -o 'ws://127\.0\.0\.1:[0-9]*' "$dir/out.log" 2>/dev/null | head -n1) && [[ -n "$url" ]] && break
        kill -0 "$pid" 2>/dev/null || { echo "gateway exited; see $dir/err.log" >&2; exit 1; }
        sleep 0.1
    done
    [[ -n "$url" ]] || { echo "gateway did not start; see $dir/err.log" >&2; exit 1; }
    python3 "$CLIENT" --url "$url" --token "$(cat "$dir/gateway-token")" turn \
        --session-key bench --message hi --repeat "$turns" >/dev/null
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    awk '/^(summary|totals):/ {print $2; exit}' "$dir/callgrind.out"
    [[ "${KEEP_STATE:-0}" == 1 ]] || rm -rf "$dir"
}

for round in $(seq 1 "$ROUNDS"); do
    for mode in on off; do
        short=$(instructions "$mode" "$SHORT")
        long=$(instructions "$mode" "$LONG")
        per_turn=$(( (long - short) / (LONG - SHORT) ))
        emit "{\"bench\":\"metrics_overhead\",\"round\":$round,\"metrics\":\"$mode\",\"ir_short\":$short,\"ir_long\":$long,\"ir_per_turn\":$per_turn}"
    done
done
