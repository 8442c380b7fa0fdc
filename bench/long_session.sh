#!/usr/bin/env bash
# Long conversations (BENCHMARKS.md): one turn's gateway overhead in a session of 10 messages and
# in one of 10,000, on a model whose contextWindow (4,000 tokens) is smaller than the messages
# the run loads, so every turn fits the conversation to the window. Loopback only; about a
# minute on 2 cores after the build.
#
#   bench/long_session.sh
#
# A turn is the bench kit's `turn` (chat.send, then agent.wait) against the kit's mock_llm.py
# (OpenAI Chat Completions, streaming, instant). The two sessions are seeded with `switchboard dev
# seed` before the gateway starts.
#
# Environment: BENCH_DIR, BENCH_KIT, SKIP_BUILD=1, KEEP_STATE=1 as for foundation.sh, and
#   TURNS      turns per figure (default 300)
#   MOCK_PORT  port of the mock model (default 18997)
set -euo pipefail

TURNS=${TURNS:-300}
MOCK_PORT=${MOCK_PORT:-18997}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=("$RUN/state")

start_mock "$MOCK_PORT"

mkdir -p "$RUN/state"
cat >"$RUN/config.json5" <<EOF5
{
  models: { providers: { mock: { api: "openai-completions", baseUrl: "http://127.0.0.1:$MOCK_PORT/v1",
                                 models: [{ id: "mock-model", contextWindow: 4000 }] } } },
  agents: { defaults: { model: "mock/mock-model" } },
}
EOF5
"$BIN" --state-dir "$RUN/state" --config "$RUN/config.json5" dev seed --big-session short --big-messages 10 >/dev/null
"$BIN" --state-dir "$RUN/state" --config "$RUN/config.json5" dev seed --big-session long --big-messages 10000 >/dev/null
GW_ARGS=(--config "$RUN/config.json5")
start_gateway "$RUN/state"
PID=$GW_PID
cpu_ms() { awk '{print ($14 + $15) * 10}' "/proc/$PID/stat"; }

# turns LABEL KEY: one JSON line with the gateway's CPU per turn (20 warm-up turns first, in the
# same session, so its window is loaded once before the measured turns).
turns() {
    local label=$1 key=$2 before after out
    python3 "$CLIENT" --url "$GW_URL" --token "$GW_TOKEN" turn --session-key "$key" --message hi --repeat 20 >/dev/null
    before=$(cpu_ms)
    out=$(python3 "$CLIENT" --url "$GW_URL" --token "$GW_TOKEN" turn --session-key "$key" --message hi --repeat "$TURNS")
    after=$(cpu_ms)
    emit "$(python3 -c 'import json,sys
d=json.loads(sys.argv[2]); d.pop("url",None)
n=d["ok"]; wall=d["wallMs"]/1000
print(json.dumps({"figure":sys.argv[1],"turnsPerSecond":round(n/wall),"gatewayCpuMsPerTurn":round((int(sys.argv[4])-int(sys.argv[3]))/max(n,1),2),**d}))' \
        "$label" "$out" "$before" "$after")"
}

echo "== a session of 10 messages"
turns "turn, 10-message session" agent:main:short
echo "== a session of 10,000 messages"
turns "turn, 10,000-message session" agent:main:long
echo "== a session of 10,000 messages, first turn after a restart (window read from the store)"
stop_gateway
start_gateway "$RUN/state"
PID=$GW_PID
out=$(python3 "$CLIENT" --url "$GW_URL" --token "$GW_TOKEN" turn --session-key agent:main:long --message hi --repeat 1)
emit "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.pop("url",None); print(json.dumps({"figure":"first turn after restart, 10,000 messages","turnsPerSecond":0,"gatewayCpuMsPerTurn":0,**d}))' "$out")"
stop_gateway
echo "== load after the run: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
python3 - "$RESULTS" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line); l = d["latencyMs"]
    print(f'{d["figure"]:<44} p50 {l["p50"]:>7} ms  p99 {l["p99"]:>7} ms  gateway CPU {d["gatewayCpuMsPerTurn"]} ms/turn  (n={d["ok"]}, errors {d["errors"]})')
PY
echo "results: $RESULTS"
