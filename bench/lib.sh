# Shared by the benchmark scripts: build, run dir, results, gateway start/stop, clean-up.
# It sets ROOT, KIT (BENCH_KIT), BENCH_DIR, CLIENT and BIN; after sourcing it, set CLEANUP_DIRS
# (an array of paths removed on exit unless KEEP_STATE=1).

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KIT=${BENCH_KIT:-$(cd "$ROOT/.." && pwd)/shared/bench}
BENCH_DIR=${BENCH_DIR:-/tmp/switchboard-bench}
CLIENT="$KIT/client/gw_client.py"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
# BENCH_BIN: another build (e.g. target/profiling/switchboard, with SKIP_BUILD=1).
BIN=${BENCH_BIN:-"$TARGET_DIR/release/switchboard"}

[[ -f "$CLIENT" ]] || { echo "bench kit client not found at $CLIENT (set BENCH_KIT)" >&2; exit 1; }

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    echo "== building the release binary"
    (cd "$ROOT" && cargo build --release -p switchboard-cli)
fi
[[ -x "$BIN" ]] || { echo "no binary at $BIN" >&2; exit 1; }

mkdir -p "$BENCH_DIR"
RUN=$(mktemp -d "$BENCH_DIR/run-$(date +%Y%m%d-%H%M%S)-XXXX")
RESULTS="$RUN/results.jsonl"
: >"$RESULTS"
echo "== run dir $RUN"

PIDS=()
GW_ARGS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill -CONT "$pid" 2>/dev/null || true # the bench may have left it stopped
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done # not always this shell's child
        fi
    done
    if [[ "${KEEP_STATE:-0}" != 1 ]]; then
        local dir
        for dir in "${CLEANUP_DIRS[@]}"; do rm -rf "$dir"; done
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A JSON line on stdout and in results.jsonl.
emit() {
    echo "$1"
    echo "$1" >>"$RESULTS"
}

# start_gateway DIR [WRAPPER...]: start a gateway on a free port over DIR (under WRAPPER, e.g.
# valgrind); sets GW_PID, GW_URL, GW_TOKEN.
start_gateway() {
    local dir=$1 log="$1.gateway"
    shift
    "$@" "$BIN" --state-dir "$dir" "${GW_ARGS[@]}" gateway --port 0 >"$log.out" 2>"$log.err" &
    GW_PID=$!
    PIDS+=("$GW_PID")
    local i
    for i in $(seq 1 2400); do
        if GW_URL=$(grep -o 'ws://127\.0\.0\.1:[0-9]*' "$log.out" 2>/dev/null | head -n1) && [[ -n "$GW_URL" ]]; then
            GW_TOKEN=$(cat "$dir/gateway-token")
            return 0
        fi
        kill -0 "$GW_PID" 2>/dev/null || { echo "gateway exited; see $log.err" >&2; exit 1; }
        sleep 0.05
    done
    echo "gateway did not start within 120 s; see $log.err" >&2
    exit 1
}

stop_gateway() {
    kill -TERM "$GW_PID" 2>/dev/null || true
    wait "$GW_PID" 2>/dev/null || true
}


# start_mock PORT: the bench kit's mock model (OpenAI format, streaming, instant) on PORT, once it
# accepts connections; its log is $RUN/mock.log. It closes each connection after its answer;
# MOCK_KEEP_ALIVE=1 keeps them instead, as a provider does (bench/tool_mock.py --keep-alive,
# the kit's mock with chunked answers; compare.sh's default); MOCK_ONE_WRITE=1 keeps them and
# writes each answer at once from an event loop (bench/tool_mock.py --one-write).
start_mock() {
    local port=$1
    if [[ ${MOCK_ONE_WRITE:-0} == 1 ]]; then
        python3 "$ROOT/bench/tool_mock.py" --kit "$KIT" --port "$port" --one-write >"$RUN/mock.log" 2>&1 &
    elif [[ ${MOCK_KEEP_ALIVE:-0} == 1 ]]; then
        python3 "$ROOT/bench/tool_mock.py" --kit "$KIT" --port "$port" --keep-alive >"$RUN/mock.log" 2>&1 &
    else
        python3 "$KIT/mock_llm.py" --port "$port" >"$RUN/mock.log" 2>&1 &
    fi
    PIDS+=("$!")
    for _ in $(seq 1 100); do
        python3 - "$port" 2>/dev/null <<'PY' && break
import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.2).close()
PY
        sleep 0.05
    done
}

# store_config KIND URL SCHEMA: writes $RUN/config-KIND.json5 (KIND sqlite | postgres, the latter
# on URL in SCHEMA), a gateway on the mock model at $MOCK_PORT, and prints its path.
store_config() {
    local store=''
    [[ $1 == postgres ]] && store="store: { kind: \"postgres\", url: \"$2\", schema: \"$3\" },"
    cat >"$RUN/config-$1.json5" <<EOF5
{
  $store
  models: { providers: { mock: { api: "openai-completions", baseUrl: "http://127.0.0.1:$MOCK_PORT/v1",
                                 models: [{ id: "mock-model" }] } } },
  agents: { defaults: { model: "mock/mock-model", maxConcurrent: 16 } },
}
EOF5
    echo "$RUN/config-$1.json5"
}

# cpu_ticks PID: utime + stime of PID, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
