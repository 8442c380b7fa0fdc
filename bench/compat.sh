#!/usr/bin/env bash
# Runs the reference's own CLI (OpenClaw, installed by the bench kit) against a switchboard
# gateway and prints one PASS/FAIL line per command, then a Markdown table for
# docs/compatibility.md. Not part of `cargo test`: it needs the bench kit and the reference's npm
# package (installed on first use by ../shared/bench/openclaw/install.sh).
#
#   bench/compat.sh                 # builds the release binary first
#   SKIP_BUILD=1 bench/compat.sh    # uses target/release/switchboard as it is
#
# Exit status: 0 when every line passed, 1 otherwise. Needs tmux for the TUI line.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OC_KIT="$KIT/openclaw"
bash "$OC_KIT/install.sh" >"$RUN/install.log" 2>&1 || {
    echo "could not install the reference CLI; see $RUN/install.log" >&2
    exit 1
}
source "$OC_KIT/env.sh" # NODE, OC_APP: the kit's Node and the reference's npm project
SB_STATE="$RUN/switchboard"
OC_STATE="$RUN/openclaw"
mkdir -p "$SB_STATE" "$OC_STATE"
CLEANUP_DIRS=()
# The Control UI is served from its own loopback port: the gateway must accept that origin. The
# agent `ctx` answers with the kit's mock model, whose context window is known (the TUI's footer
# shows it); WhatsApp's webhook takes a stranger's message (a pending pairing request). Its Graph
# API is a closed port: the pairing code's delivery fails and is retried, which changes nothing here.
MOCK_PORT=18932
WA_SECRET=compat-app-secret
start_mock "$MOCK_PORT"
cat >"$SB_STATE/config.json5" <<JSON5
{
  gateway: { controlUi: { allowedOrigins: ["http://127.0.0.1:18931"] } },
  models: { providers: { mock: { api: "openai-completions", baseUrl: "http://127.0.0.1:$MOCK_PORT/v1",
    models: [{ id: "mock-model", contextWindow: 128000 }] } } },
  agents: { list: [{ id: "main", default: true }, { id: "ctx", model: "mock/mock-model" }] },
  channels: { whatsapp: { enabled: true, accessToken: "compat-token", phoneNumberId: "1065000",
    appSecret: "$WA_SECRET", verifyToken: "compat-verify", apiBase: "http://127.0.0.1:9/v21.0" } },
}
JSON5
start_gateway "$SB_STATE"
printf '{"gateway":{"mode":"remote","remote":{"url":"%s","token":"%s"}}}\n' "$GW_URL" "$GW_TOKEN" \
    >"$OC_STATE/openclaw.json"

oc() { timeout 120 bash "$OC_KIT/cli.sh" --state "$OC_STATE" -- "$@"; }

PASSED=0
FAILED=0
ROWS=()
# check NAME EXPECTED-REGEX COMMAND...: runs the command; passes when it exits 0 and its output
# matches the regex.
check() {
    local name=$1 expect=$2
    shift 2
    local out="$RUN/$(echo "$name" | tr -c 'a-zA-Z0-9' '_').out" status
    "$@" >"$out" 2>&1
    status=$?
    if [[ $status == 0 ]] && grep -Eq -- "$expect" "$out"; then
        echo "PASS  $name"
        PASSED=$((PASSED + 1))
        ROWS+=("| \`$name\` | pass | |")
    else
        local why
        why=$(grep -v '^\s*$' "$out" | tail -n 1 | cut -c1-160 | tr '|' '/')
        echo "FAIL  $name (exit $status): $why"
        FAILED=$((FAILED + 1))
        ROWS+=("| \`$name\` | **fail** | exit $status: $why |")
    fi
}

# doctor: of its findings, only the version one is about this gateway (docs/decisions.md).
doctor_gateway() {
    local out
    out=$(oc doctor --non-interactive 2>&1) || { echo "$out"; return 1; }
    echo "$out"
    if grep -Eq 'memory probe|Exporter diagnostics failed|unknown method' <<<"$out"; then
        echo "doctor found a gateway method missing"
        return 1
    fi
}

# tui_screen NAME ARGS REGEX [REGEX2]: runs the reference's TUI with ARGS under tmux until its
# screen matches REGEX (and REGEX2), at most a minute; prints the screen.
tui_screen() {
    command -v tmux >/dev/null || { echo "tmux not installed"; return 1; }
    local session="compat-$1-$$" i screen=""
    tmux new-session -d -s "$session" -x 160 -y 40 "bash '$OC_KIT/cli.sh' --state '$OC_STATE' -- tui $2"
    for i in $(seq 1 60); do
        screen=$(tmux capture-pane -p -t "$session" 2>/dev/null)
        if grep -Eq -- "$3" <<<"$screen" && grep -Eq -- "${4:-.}" <<<"$screen"; then break; fi
        sleep 1
    done
    tmux kill-session -t "$session" 2>/dev/null
    echo "$screen"
}

# One exchange: the reply, and the footer's tokens once the turn is done.
tui_exchange() {
    tui_screen tui "--session agent:main:main --message '@reply tui-pong-7'" '^tui-pong-7' 'tokens'
}

check "agent --message" '^agent-pong-1$' \
    oc agent --session-key agent:main:main --message '@reply agent-pong-1'
check "agent --json" '"text": "agent-pong-2"' \
    oc agent --session-key agent:main:main --message '@reply agent-pong-2' --json
check "gateway call health" '"ok": true' oc gateway call health --json
check "gateway call sessions.list" 'agent:main:main' oc gateway call sessions.list --json
check "gateway call chat.history" 'agent-pong-1' \
    oc gateway call chat.history --params '{"sessionKey":"agent:main:main"}' --json
check "health" 'Session store \(main\): .*/switchboard/switchboard\.db' oc health
check "status" 'Gateway.*reachable' oc status
check "gateway probe" 'Read probe: ok' oc gateway probe
check "cron add --every" '"id": "nightly"' oc cron add nightly --every 10m --message 'nightly report'
check "cron add --cron" '"expr": "0 \* \* \* \*"' \
    oc cron add hourly --cron '0 * * * *' --message 'hourly report'
check "cron list" 'nightly.*every 10m' oc cron list
check "cron run" '"ok": true' oc cron run nightly
check "gateway call usage.cost" '"totals"' oc gateway call usage.cost --json
check "sessions delete" '"status": "deleted"' \
    bash -c "$(declare -f oc); OC_KIT='$OC_KIT' OC_STATE='$OC_STATE'; \
        oc gateway call sessions.create --params '{\"key\":\"agent:main:compat\"}' --json >/dev/null && \
        oc sessions delete agent:main:compat --yes --json"
check "cron add --announce" '"mode": "announce"' \
    oc cron add announced --every 10m --message 'announced report' --announce
check "cron list (Delivery)" 'announced .*announce \(the job session' oc cron list
check "cron runs" '"entries"' oc cron runs --id nightly
check "cron disable" '"enabled": false' oc cron disable nightly
check "cron enable" '"enabled": true' oc cron enable nightly
check "cron edit" '"everyMs": 1200000' oc cron edit nightly --every 20m
check "agent --json (usage)" '"output": [1-9]' \
    oc agent --session-key agent:main:main --message '@reply agent-pong-3' --json
check "status --json" '"runtimeVersion"' oc status --json
check "models list" 'builtin/scripted' oc models list
check "channels status" 'Gateway reachable' oc channels status
check "gateway stability" 'Events: 0' oc gateway stability
check "system event" '^ok$' oc system event --text 'compat event'
check "system heartbeat last" '^null$' oc system heartbeat last
check "nodes status" 'Known: 0' oc nodes status
check "skills list" 'No skills found' oc skills list
check "tui (one exchange)" '^tui-pong-7' tui_exchange

# A reply streamed word by word, 300 ms apart: while it streams, the TUI shows it from its first
# word on, not only the newest piece. The TUI shows each chat delta's `message` (the text so
# far), which our deltas carry at most every 75 ms beside the new piece (docs/protocol.md).
tui_streaming() {
    command -v tmux >/dev/null || { echo "tmux not installed"; return 1; }
    local session="compat-stream-$$" i screen="" words
    words=$(printf 'tui-s%d ' $(seq 0 19))
    tmux new-session -d -s "$session" -x 160 -y 40 \
        "bash '$OC_KIT/cli.sh' --state '$OC_STATE' -- tui --session agent:main:main --message '@slow 300
@reply ${words% }'"
    for i in $(seq 1 300); do
        screen=$(tmux capture-pane -p -t "$session" 2>/dev/null)
        if grep -Eq '^tui-s0 tui-s1 tui-s2 tui-s3' <<<"$screen" && ! grep -Eq '^tui-s0 .*tui-s19' <<<"$screen"; then
            echo "partial: $(grep -E '^tui-s0' <<<"$screen" | head -1)"
            break
        fi
        sleep 0.1
    done
    tmux kill-session -t "$session" 2>/dev/null
    echo "$screen"
}
check "tui streaming (the reply grows from its first word)" '^partial: tui-s0 tui-s1 tui-s2 tui-s3' tui_streaming
# The TUI's footer: how full the context is beside the model's window.
tui_footer() {
    tui_screen tui-ctx "--session agent:ctx:main --message 'hello window'" 'tokens [0-9.k]+/128k \([0-9]+%\)'
}
check "tui footer (context window)" 'tokens [0-9.k]+/128k \([0-9]+%\)' tui_footer

# Pairing: a stranger writes to the WhatsApp number (a signed webhook notification); the gateway's
# pending request is listed and approved through the protocol. The reference's own `pairing`
# command reads only its local state database (docs/decisions.md): it answers its empty state.
whatsapp_pairing() {
    local http=${GW_URL/ws:/http:} code=""
    python3 - "$http/channels/whatsapp" "$WA_SECRET" <<'PY' || return 1
import hashlib, hmac, json, sys, time, urllib.request
url, secret = sys.argv[1], sys.argv[2]
message = {"from": "15550001111", "id": "wamid.compat1", "timestamp": str(int(time.time())),
           "type": "text", "text": {"body": "hello, may I come in?"}}
body = json.dumps({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [{
    "field": "messages", "value": {"messaging_product": "whatsapp",
    "metadata": {"display_phone_number": "15550009999", "phone_number_id": "1065000"},
    "contacts": [{"profile": {"name": "Compat"}, "wa_id": "15550001111"}],
    "messages": [message]}}]}]}).encode()
signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
request = urllib.request.Request(url, data=body, method="POST", headers={
    "content-type": "application/json", "x-hub-signature-256": signature})
print("webhook:", urllib.request.urlopen(request, timeout=10).status)
PY
    for _ in $(seq 1 20); do
        code=$(oc gateway call pairing.list --params '{"channel":"whatsapp"}' --json |
            python3 -c 'import json,sys; r=json.load(sys.stdin)["requests"]; print(r[0]["code"] if r else "")')
        [[ -n "$code" ]] && break
        sleep 0.5
    done
    [[ -n "$code" ]] || { echo "no pending whatsapp request"; return 1; }
    echo "pending: $code"
    oc gateway call pairing.approve --params "{\"channel\":\"whatsapp\",\"code\":\"$code\"}" --json
}
check "pairing list|approve (gateway call)" '"id": "15550001111"' whatsapp_pairing
check "pairing list (the reference's local store)" 'No pending whatsapp pairing requests' \
    oc pairing list --channel whatsapp
check "doctor (no gateway memory probe)" 'Doctor complete' doctor_gateway

check "logs" 'run ended' oc logs --limit 20

# The operator's reads of issue 57: each answered where the reference's clients call them.
check "cron add (the job itself: jq .id)" '^weekly$' bash -c "$(declare -f oc); OC_KIT='$OC_KIT' \
    OC_STATE='$OC_STATE'; oc cron add weekly --every 1h --message 'weekly report' --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[\"id\"])'"
check "cron runs (every job)" '"total": [1-9]' oc gateway call cron.runs --params '{"scope":"all"}' --json
check "gateway usage-cost" 'Total: \$' oc gateway usage-cost --days 7
check "gateway call sessions.usage" '"aggregates"' oc gateway call sessions.usage --json
check "gateway call usage.status" '"providers": \[\]' oc gateway call usage.status --json
check "gateway call plugins.list" '"plugins": \[\]' oc gateway call plugins.list --json
check "gateway call channels.pairing.list" '"requests"' \
    oc gateway call channels.pairing.list --json
check "nodes list" 'Pending: 0' oc nodes list
check "devices list" 'Paired|Pending|No ' oc devices list
check "sessions.list (hasMore, nextOffset)" '"nextOffset": 1' \
    oc gateway call sessions.list --params '{"limit":1}' --json
# The TUI's `/status`: answered by the gateway with a status card, no model call.
tui_status() {
    tui_screen tui-status "--session agent:main:main --message '/status'" 'Session: agent:main:main'
}
check "tui /status (a status card)" 'Session: agent:main:main' tui_status

# The Control UI: its built assets served from loopback, the page in headless Chromium; it must
# send from its composer and reach its done state ("Done in …", nothing "Working…") for an
# instant reply and a 1.5 s one, every method it calls answered (the replies land in chat.history).
# control_ui_script SCRIPT ARGS...: serves the Control UI's built assets on a loopback port and
# runs SCRIPT (in headless Chromium) on the page, switched to this gateway, with ARGS.
control_ui_script() {
    command -v chromium >/dev/null || { echo "chromium not installed (apt install chromium)"; return 1; }
    local assets="$OC_APP/node_modules/openclaw/dist/control-ui" port=18931 ui_pid status script=$1
    shift
    python3 -m http.server "$port" --bind 127.0.0.1 --directory "$assets" >"$RUN/ui-http.log" 2>&1 &
    ui_pid=$!
    PIDS+=("$ui_pid")
    sleep 1
    PLAYWRIGHT_CORE="$OC_APP/node_modules/playwright-core/index.mjs" "$NODE" \
        "$ROOT/bench/$script" "http://127.0.0.1:$port/?gatewayUrl=$GW_URL#token=$GW_TOKEN" "$@"
    status=$?
    kill "$ui_pid" 2>/dev/null
    return $status
}

control_ui() {
    control_ui_script control_ui.mjs 'control-ui-pong' "$RUN/control-ui.png" || return 1
    oc gateway call chat.history --params '{"sessionKey":"agent:main:main"}' --json
}

# The importer reads a stopped gateway's state dir: a labelled session must keep its key and label.
doctor_import() {
    oc gateway call sessions.create --params '{"key":"agent:main:labelled","label":"Kept label"}' \
        --json >/dev/null || return 1
    stop_gateway
    local copy="$RUN/import-copy"
    cp -r "$SB_STATE" "$copy"
    timeout 300 bash "$OC_KIT/cli.sh" --state "$copy" -- doctor --session-sqlite import \
        --session-sqlite-all-agents || return 1
    python3 - "$copy/agents/main/agent/openclaw-agent.sqlite" <<'PY'
import json, sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT session_key, entry_json FROM session_nodes")
for key, entry in rows:
    print(f"imported {key} label={json.loads(entry).get('label')}")
PY
}
check "control ui (headless chromium)" '"text": "control-ui-pong-slow"' control_ui
# The Control UI's pages around the chat: Usage, Automations, Sessions, Channels, Devices, Logs.
control_ui_pages() {
    control_ui_script control_ui_pages.mjs "$RUN/control-ui-page"
}
check "control ui pages (Usage, Automations, Sessions, Channels, Devices, Logs)" \
    'every page answered' control_ui_pages
check "doctor --session-sqlite import" 'imported agent:main:labelled label=Kept label' doctor_import

echo
echo "passed $PASSED, failed $FAILED (outputs in $RUN)"
{
    echo "| command | result | detail |"
    echo "|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
} >"$RUN/table.md"
echo "table: $RUN/table.md"
[[ $FAILED == 0 ]]
