#!/usr/bin/env bash
# The spawn burst (BENCHMARKS.md): 1,000 sessions_spawn calls through tools.invoke (50 at a time)
# on the instant builtin/scripted model, timed from the first call until every sub-agent's
# announce has been delivered into the requester session (each one exactly once). Loopback
# only; about half a minute on 2 cores after the build.
#
#   bench/spawn.sh
#
# Environment: BENCH_DIR, BENCH_KIT, SKIP_BUILD=1, KEEP_STATE=1 as for foundation.sh, and
#   SPAWNS       spawns in the burst (default 1000, at most 1000: the count reads one history page)
#   CONCURRENCY  spawn calls in flight (default 50)
set -euo pipefail

SPAWNS=${SPAWNS:-1000}
CONCURRENCY=${CONCURRENCY:-50}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLEANUP_DIRS=("$RUN/state")

mkdir -p "$RUN/state"
cat >"$RUN/config.json5" <<'EOF5'
{
  agents: {
    defaults: { subagents: { maxConcurrent: 16 } },
    list: [ { id: "main", default: true,
              systemPrompt: "@when \"Sub-agent announce step\" @reply Result: done\\nNotes: none" } ],
  },
}
EOF5
GW_ARGS=(--config "$RUN/config.json5")
start_gateway "$RUN/state"
PID=$GW_PID
cpu_ms() { awk '{print ($14 + $15) * 10}' "/proc/$PID/stat"; }
call() { "$BIN" --url "$GW_URL" --token "$GW_TOKEN" call "$1" --params "$2"; }

call sessions.create '{"key":"agent:main:main"}' >/dev/null
SPAWN='{"sessionKey":"agent:main:main","tool":"sessions_spawn","args":{"task":"@reply child done"}}'
echo "== $SPAWNS spawns, $CONCURRENCY in flight"
before=$(cpu_ms)
t0=$(date +%s%N)
calls=$(python3 "$CLIENT" --url "$GW_URL" --token "$GW_TOKEN" call tools.invoke "$SPAWN" \
    --repeat "$SPAWNS" --concurrency "$CONCURRENCY")
accepted_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
count_announces() {
    call chat.history '{"sessionKey":"agent:main:main","limit":1000}' | python3 -c '
import json, sys
messages = json.load(sys.stdin)["messages"]
children = [m["provenance"]["fromSessionKey"] for m in messages
            if m.get("provenance", {}).get("kind") == "subagent-announce"]
print(len(children), len(set(children)))'
}
while :; do
    read -r announced distinct < <(count_announces)
    [[ "$announced" -ge "$SPAWNS" ]] && break
    sleep 0.05
done
all_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
after=$(cpu_ms)
emit "$(python3 -c 'import json,sys
calls=json.loads(sys.argv[1]); n=int(sys.argv[2])
print(json.dumps({"figure":"spawn burst","spawns":n,"accepted":calls["ok"],"errors":calls["errors"],
  "spawnCallLatencyMs":calls["latencyMs"],"allAcceptedMs":int(sys.argv[3]),"allAnnouncedMs":int(sys.argv[4]),
  "announces":int(sys.argv[5]),"distinctChildren":int(sys.argv[6]),
  "gatewayCpuMs":int(sys.argv[8])-int(sys.argv[7])}))' \
    "$calls" "$SPAWNS" "$accepted_ms" "$all_ms" "$announced" "$distinct" "$before" "$after")"
stop_gateway
echo "results: $RESULTS"
