#!/usr/bin/env bash
# `sessions_send` with wait, two builds side by side (BENCHMARKS.md, issue 38 point 6): both
# gateways up at once on one bench/tool_mock.py, `switchboard bench --workloads send` over them in
# interleaved rounds (p50/p99 of the timed turn and each gateway's CPU in its timed windows);
# then each build under callgrind for SHORT and LONG samples: instructions per sample =
# (Ir at LONG − Ir at SHORT) / (LONG − SHORT), start-up cancelled out. A sample is the bench's:
# the target's warm-up turn, the timed turn (three model calls, two runs) and the reply-back loop
# and announce after it (six runs), with the transcript reads of the settle wait. Loopback only.
#
#   bench/send_path.sh BEFORE-BINARY AFTER-BINARY
#
# Environment: BENCH_DIR, BENCH_KIT, KEEP_STATE=1 as for foundation.sh (the build is never made
# here: give two binaries), and
#   SENDS, ROUNDS   samples per round and rounds of the timed comparison (default 20, 3)
#   SHORT, LONG     samples of the two callgrind runs (default 3, 9); CALLGRIND=0 skips them
#   WORKLOADS       the timed comparison's workloads (default send; e.g. turn,send)
set -euo pipefail

[[ $# == 2 ]] || { echo "usage: bench/send_path.sh BEFORE-BINARY AFTER-BINARY" >&2; exit 2; }
BEFORE=$1 AFTER=$2
SENDS=${SENDS:-20}
ROUNDS=${ROUNDS:-3}
SHORT=${SHORT:-3}
LONG=${LONG:-9}
SKIP_BUILD=1 BENCH_BIN=$AFTER
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=("$RUN/before" "$RUN/after")
TOKEN=bench-token-0123456789
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() { python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.3).close()' "$1" 2>/dev/null; }

MOCK_PORT=$(free_port)
python3 "$ROOT/bench/tool_mock.py" --kit "$KIT" --port "$MOCK_PORT" >"$RUN/mock.log" 2>&1 &
PIDS+=("$!")
until listening "$MOCK_PORT"; do sleep 0.05; done
cat >"$RUN/config.json5" <<EOF5
{
  models: { providers: { mock: { api: "openai-completions", baseUrl: "http://127.0.0.1:$MOCK_PORT/v1",
                                 models: [{ id: "mock-model" }] } } },
  agents: { defaults: { model: "mock/mock-model", maxConcurrent: 16 } },
  gateway: { auth: { token: "$TOKEN" } },
}
EOF5

# up NAME BINARY [WRAPPER...]: a gateway on a new store; sets PORT and UP_PID.
up() {
    local name=$1 bin=$2
    shift 2
    PORT=$(free_port)
    "$@" "$bin" --state-dir "$RUN/$name" --config "$RUN/config.json5" gateway --port "$PORT" \
        >"$RUN/$name.out" 2>"$RUN/$name.err" &
    UP_PID=$!
    PIDS+=("$UP_PID")
    local i
    for i in $(seq 1 1200); do
        listening "$PORT" && return 0
        kill -0 "$UP_PID" 2>/dev/null || { echo "$name exited; see $RUN/$name.err" >&2; exit 1; }
        sleep 0.1
    done
    echo "$name did not start" >&2
    exit 1
}
down() { kill -CONT "$1" 2>/dev/null || true; kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

echo "== timed: before and after, $ROUNDS interleaved rounds of $SENDS samples"
up before "$BEFORE"
A_PORT=$PORT A_PID=$UP_PID
up after "$AFTER"
B_PORT=$PORT B_PID=$UP_PID
"$AFTER" bench --target "before=ws://127.0.0.1:$A_PORT,token=$TOKEN,pid=$A_PID" \
    --target "after=ws://127.0.0.1:$B_PORT,token=$TOKEN,pid=$B_PID" --rounds "$ROUNDS" \
    --workloads "${WORKLOADS:-send}" --sends "$SENDS" --out "$RUN/timed.jsonl" 2>>"$RUN/bench.err"
grep '"summary":true' "$RUN/timed.jsonl" | while read -r line; do emit "$line"; done
down "$A_PID"
down "$B_PID"
rm -rf "$RUN/before" "$RUN/after"

[[ "${CALLGRIND:-1}" == 1 ]] || exit 0
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
# instructions NAME BINARY SAMPLES: the gateway's total Ir over SAMPLES send samples.
instructions() {
    up "$1" "$2" valgrind --tool=callgrind --callgrind-out-file="$RUN/$1-$3.callgrind"
    "$AFTER" bench --target "$1=ws://127.0.0.1:$PORT,token=$TOKEN" --rounds 1 --workloads send \
        --sends "$3" --send-settle-s 2 --out "$RUN/$1-$3.jsonl" >/dev/null 2>>"$RUN/bench.err"
    down "$UP_PID"
    rm -rf "${RUN:?}/$1"
    awk '/^(summary|totals):/ {print $2; exit}' "$RUN/$1-$3.callgrind"
}
for name in before after; do
    bin=$BEFORE
    [[ $name == after ]] && bin=$AFTER
    short=$(instructions "$name" "$bin" "$SHORT")
    long=$(instructions "$name" "$bin" "$LONG")
    emit "{\"step\": \"instructions-per-sample\", \"build\": \"$name\", \"short\": $short, \"long\": $long, \"perSample\": $(((long - short) / (LONG - SHORT)))}"
done
