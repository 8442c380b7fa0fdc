#!/usr/bin/env bash
# The runtime benchmark (BENCHMARKS.md): one agent turn's gateway overhead with an instant mock
# model, and aggregate turns per second with 100 sessions in parallel. Loopback only; about a
# minute on 2 cores after the build.
#
#   bench/runtime.sh
#
# It also measures the session tools: a sessions_send with wait made by a model's tool call
# (builtin/scripted), and sessions_list with messageLimit 5 over 200 rows (tools.invoke).
#
# A turn is the bench kit's `turn`: chat.send, then agent.wait for the run's end. The model is
# the kit's mock_llm.py (OpenAI Chat Completions, streaming, instant), so the figures measure the
# gateway; the same turn on builtin/echo shows the gateway without any model HTTP hop.
#
# Environment: BENCH_DIR, BENCH_KIT, SKIP_BUILD=1, KEEP_STATE=1 as for foundation.sh, and
#   TURNS        sequential turns per latency figure (default 300)
#   PARALLEL     sessions in parallel for the throughput figure (default 100)
#   PAR_TURNS    turns in the throughput figure (default 2000)
#   MOCK_PORT    port of the mock model (default 18998)
set -euo pipefail

TURNS=${TURNS:-300}
PARALLEL=${PARALLEL:-100}
PAR_TURNS=${PAR_TURNS:-2000}
MOCK_PORT=${MOCK_PORT:-18998}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=("$RUN/state")

start_mock "$MOCK_PORT"

mkdir -p "$RUN/state"
cat >"$RUN/config.json5" <<EOF5
{
  models: { providers: { mock: { api: "openai-completions", baseUrl: "http://127.0.0.1:$MOCK_PORT/v1",
                                 models: [{ id: "mock-model" }] } } },
  agents: {
    defaults: { model: "mock/mock-model", maxConcurrent: 16 },
    list: [ { id: "main", default: true }, { id: "echo", model: "builtin/echo" },
            { id: "scripted", model: "builtin/scripted",
              systemPrompt: "@when \\"Turn \\" @reply REPLY_SKIP\\n@when \\"announce step\\" @reply ANNOUNCE_SKIP" } ],
  },
}
EOF5
# 300 sessions with 6 messages each, for sessions_list with messageLimit.
"$BIN" --state-dir "$RUN/state" --config "$RUN/config.json5" dev seed --sessions 300 --messages-per-session 6 >/dev/null
GW_ARGS=(--config "$RUN/config.json5")
start_gateway "$RUN/state"
PID=$GW_PID

cpu_ms() { awk '{print ($14 + $15) * 10}' "/proc/$PID/stat"; }

# turns LABEL KEY REPEAT CONCURRENCY [MESSAGE]: one JSON line; adds the gateway's CPU per turn.
turns() {
    local label=$1 key=$2 repeat=$3 conc=$4 message=${5:-hi} before after out
    python3 "$CLIENT" --url "$GW_URL" --token "$GW_TOKEN" turn --session-key "$key-warm" --message "$message" --repeat 20 >/dev/null
    before=$(cpu_ms)
    out=$(python3 "$CLIENT" --url "$GW_URL" --token "$GW_TOKEN" turn --session-key "$key" --message "$message" \
        --repeat "$repeat" --concurrency "$conc")
    after=$(cpu_ms)
    emit "$(python3 -c 'import json,sys
d=json.loads(sys.argv[2]); d.pop("url",None)
n=d["ok"]; wall=d["wallMs"]/1000
print(json.dumps({"figure":sys.argv[1],"turnsPerSecond":round(n/wall),"gatewayCpuMsPerTurn":round((int(sys.argv[4])-int(sys.argv[3]))/max(n,1),2),**d}))' \
        "$label" "$out" "$before" "$after")"
}

echo "== one turn at a time, mock model over HTTP"
turns "turn (mock)" agent:main:seq "$TURNS" 1
echo "== one turn at a time, builtin/echo (no model HTTP hop)"
turns "turn (echo)" agent:echo:seq "$TURNS" 1
echo "== $PARALLEL sessions in parallel, mock model"
turns "turns in parallel (mock)" agent:main:par "$PAR_TURNS" "$PARALLEL"
echo "== $PARALLEL sessions in parallel, builtin/echo"
turns "turns in parallel (echo)" agent:echo:par "$PAR_TURNS" "$PARALLEL"
echo "== a model's sessions_send with wait (builtin/scripted), next to a plain scripted turn"
turns "turn (scripted)" agent:scripted:plain "$TURNS" 1 "@reply pong"
call_ok() { python3 "$CLIENT" --url "$GW_URL" --token "$GW_TOKEN" call "$1" "$2" >/dev/null; }
call_ok sessions.create '{"key":"agent:scripted:peer"}'
SEND='@tool sessions_send {"sessionKey": "agent:scripted:peer", "message": "@reply pong", "timeoutSeconds": 30}
@reply {{result.reply}}'
turns "turn with sessions_send (scripted)" agent:scripted:sender "$TURNS" 1 "$SEND"

echo "== sessions_list {limit: 200, messageLimit: 5} through tools.invoke, 300 sessions"
call_ok sessions.create '{"key":"agent:main:main"}'
LIST='{"sessionKey":"agent:main:main","tool":"sessions_list","args":{"limit":200,"messageLimit":5}}'
python3 "$CLIENT" --url "$GW_URL" --token "$GW_TOKEN" call tools.invoke "$LIST" --repeat 20 >/dev/null
out=$(python3 "$CLIENT" --url "$GW_URL" --token "$GW_TOKEN" call tools.invoke "$LIST" --repeat 100)
emit "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.pop("url",None); print(json.dumps({"figure":"sessions_list messageLimit 5, 200 rows","turnsPerSecond":0,"gatewayCpuMsPerTurn":0,**d}))' "$out")"
stop_gateway
echo "== load after the run: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
python3 - "$RESULTS" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line); l = d["latencyMs"]
    print(f'{d["figure"]:<40} p50 {l["p50"]:>7} ms  p99 {l["p99"]:>7} ms  {d["turnsPerSecond"]:>5} turns/s  '
          f'gateway CPU {d["gatewayCpuMsPerTurn"]} ms/turn  (n={d["ok"]}, errors {d["errors"]}, concurrency {d["concurrency"]})')
PY
echo "results: $RESULTS"
