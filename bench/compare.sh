#!/usr/bin/env bash
# Side by side with the reference gateway (OpenClaw, installed by the bench kit): the same mock
# model, the same client (the kit's Python client) and the same workload (the kit's
# client/workload.sh) against both, in one run, printed as one table. Loopback only.
#
#   bench/compare.sh
#
# Environment: BENCH_DIR, BENCH_KIT, SKIP_BUILD=1 as for foundation.sh, and
#   SKIP_INSTALL=1   do not run the kit's install.sh (it is idempotent anyway)
#   PARALLEL         sessions in parallel for the throughput step (default 100)
#   PAR_TURNS        turns in that step (default 1000: 100 sessions × 10 turns)
#   PAR_TIMEOUT_S    give up on the throughput step after this many seconds (default 300)
#   OC_PORT, MOCK_PORT  the reference gateway's and the mock's ports (defaults 18789, 18999)
set -euo pipefail

PARALLEL=${PARALLEL:-100}
PAR_TURNS=${PAR_TURNS:-1000}
PAR_TIMEOUT_S=${PAR_TIMEOUT_S:-300}
OC_PORT=${OC_PORT:-18789}
MOCK_PORT=${MOCK_PORT:-18999}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=("$RUN/ours")
stop_reference() { "$KIT/openclaw/stop.sh" --port "$OC_PORT" >/dev/null 2>&1 || true; }
# On exit: everything the kit started (the reference gateway and its mock), then ours.
trap '"$KIT/openclaw/stop.sh" >/dev/null 2>&1 || true; cleanup' EXIT
listening() { python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.3).close()' "$1" 2>/dev/null; }

[[ "${SKIP_INSTALL:-0}" == 1 ]] || "$KIT/openclaw/install.sh" >"$RUN/install.log" 2>&1

# workload LABEL URL TOKEN: the kit's standard workload, then the parallel step; JSON lines.
workload() {
    local label=$1 url=$2 token=$3
    # workload.sh exits 1 when a step failed; the failed step is in its output, the run goes on.
    { "$KIT/client/workload.sh" --client py --url "$url" --token "$token" || true; } | while read -r line; do
        emit "$(python3 -c 'import json,sys; d=json.loads(sys.argv[2]); d["gateway"]=sys.argv[1]; print(json.dumps(d))' "$label" "$line")"
    done
    local out
    out=$(timeout "$PAR_TIMEOUT_S" python3 "$CLIENT" --url "$url" --token "$token" turn --session-key agent:main:par \
        --message "parallel turn" --repeat "$PAR_TURNS" --concurrency "$PARALLEL" || echo null)
    emit "$(python3 -c 'import json,sys; print(json.dumps({"step":"parallel-turns","gateway":sys.argv[1],"result":json.loads(sys.argv[2])}))' "$label" "$out")"
}

rss_mib() { # PID: the process and its descendants
    local total=0 p rss
    for p in "$1" $(pgrep -P "$1" || true); do
        rss=$(awk '/^VmRSS/{print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
        total=$((total + ${rss:-0}))
    done
    awk "BEGIN{printf \"%.1f\", $total/1024}"
}

echo "== reference gateway (starts the kit's mock on $MOCK_PORT)"
"$KIT/openclaw/start.sh" --fresh --port "$OC_PORT" --mock-port "$MOCK_PORT" >"$RUN/reference.start" 2>&1
REF_READY=$(sed -n 's/.*ready after \([0-9]*\) ms.*/\1/p' "$RUN/reference.start" | head -n1)
eval "$(grep '^export GW_URL' "$RUN/reference.start")"
REF_URL=$GW_URL REF_TOKEN=$GW_TOKEN
REF_PID=$(awk '$1 == "pid" {print $2; exit}' "$RUN/reference.start")
sleep 15
emit "{\"step\":\"ready\",\"gateway\":\"reference\",\"readyMs\":${REF_READY:-null},\"idleRssMiB\":$(rss_mib "$REF_PID")}"
workload reference "$REF_URL" "$REF_TOKEN"
emit "{\"step\":\"rss-after\",\"gateway\":\"reference\",\"rssMiB\":$(rss_mib "$REF_PID")}"
stop_reference

echo "== switchboard, on the same mock"
mkdir -p "$RUN/ours"
cat >"$RUN/config.json5" <<EOF5
{
  models: { providers: { mock: { api: "openai-completions", baseUrl: "http://127.0.0.1:$MOCK_PORT/v1",
                                 models: [{ id: "mock-model" }] } } },
  agents: { defaults: { model: "mock/mock-model", maxConcurrent: 16 } },
}
EOF5
# The kit's mock may still be up (stop.sh --port leaves it): then both use the same one.
if ! listening "$MOCK_PORT"; then
    python3 "$KIT/mock_llm.py" --port "$MOCK_PORT" >"$RUN/mock.log" 2>&1 &
    PIDS+=("$!")
    until listening "$MOCK_PORT"; do sleep 0.05; done
fi
t0=$(date +%s%N)
"$BIN" --state-dir "$RUN/ours" --config "$RUN/config.json5" gateway --port 0 >"$RUN/ours.out" 2>"$RUN/ours.err" &
OUR_PID=$!
PIDS+=("$OUR_PID")
until OUR_URL=$(grep -o 'ws://127\.0\.0\.1:[0-9]*' "$RUN/ours.out" 2>/dev/null | head -n1) && [[ -n "$OUR_URL" ]]; do sleep 0.005; done
OUR_TOKEN=$(cat "$RUN/ours/gateway-token")
python3 "$CLIENT" --url "$OUR_URL" --token "$OUR_TOKEN" wait-ready --timeout-ms 10000 --pid "$OUR_PID" >/dev/null
OUR_READY=$(( ($(date +%s%N) - t0) / 1000000 ))
sleep 15
emit "{\"step\":\"ready\",\"gateway\":\"switchboard\",\"readyMs\":$OUR_READY,\"idleRssMiB\":$(rss_mib "$OUR_PID")}"
workload switchboard "$OUR_URL" "$OUR_TOKEN"
emit "{\"step\":\"rss-after\",\"gateway\":\"switchboard\",\"rssMiB\":$(rss_mib "$OUR_PID")}"

echo
python3 - "$RESULTS" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    d = json.loads(line); rows.setdefault(d["step"], {})[d["gateway"]] = d
def fig(step, gw):
    d = rows.get(step, {}).get(gw)
    if d is None: return None, "—"
    if step == "ready": return d["readyMs"], f'{d["readyMs"]} ms, idle RSS {d["idleRssMiB"]} MiB'
    if step == "rss-after": return d["rssMiB"], f'{d["rssMiB"]} MiB'
    r = d.get("result")
    if not r: return None, "did not finish" + (" within PAR_TIMEOUT_S" if step == "parallel-turns" else "")
    l = r["latencyMs"]
    if r.get("errors"): return None, f'{r["errors"]} errors: {list(r.get("errorMessages", {}))[:1]}'
    if step == "parallel-turns":
        tps = r["ok"] / (r["wallMs"] / 1000)
        return 1 / tps, f'{tps:.0f} turns/s (p50 {l["p50"]} ms, errors {r["errors"]})'
    return l["p50"], f'p50 {l["p50"]} ms, p99 {l["p99"]} ms (n={l["n"]})'
print(f'{"step":<18} {"switchboard":<44} {"reference":<44} ratio')
for step in ["ready", "health", "sessions.list", "sessions.list.200", "chat.history", "first-turn", "warm-turns", "parallel-turns", "rss-after"]:
    a, ta = fig(step, "switchboard"); b, tb = fig(step, "reference")
    ratio = f"{b / a:.0f}x" if a and b else "—"
    print(f"{step:<18} {ta:<44} {tb:<44} {ratio}")
PY
echo "results: $RESULTS"
