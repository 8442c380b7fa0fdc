#!/usr/bin/env bash
# The reference's own TUI (OpenClaw, installed by the bench kit) against a switchboard gateway,
# in tmux: TURNS instant replies (`@reply …`, the scripted model answers at once) sent one after
# the other. After each, the TUI must show the reply and be idle again (`connected | idle`);
# issue 35 saw 3 of 5 instant replies leave it busy ("agent is busy" on the next message).
# Not part of `cargo test`: it needs the bench kit, the reference's npm package and tmux.
#
#   bench/tui_turns.sh                     # builds the release binary first; TURNS=10
#   SKIP_BUILD=1 TURNS=20 bench/tui_turns.sh
#
# Prints one line per turn and a summary; exit status 0 when every turn ended idle.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v tmux >/dev/null || {
    echo "tmux not installed (apt-get install tmux)" >&2
    exit 1
}

OC_KIT="$KIT/openclaw"
bash "$OC_KIT/install.sh" >"$RUN/install.log" 2>&1 || {
    echo "could not install the reference CLI; see $RUN/install.log" >&2
    exit 1
}
SB_STATE="$RUN/switchboard"
OC_STATE="$RUN/openclaw"
mkdir -p "$SB_STATE" "$OC_STATE"
CLEANUP_DIRS=()
start_gateway "$SB_STATE"
printf '{"gateway":{"mode":"remote","remote":{"url":"%s","token":"%s"}}}\n' "$GW_URL" "$GW_TOKEN" \
    >"$OC_STATE/openclaw.json"

TURNS=${TURNS:-10}
SESSION="tui-turns-$$"
tmux new-session -d -s "$SESSION" -x 160 -y 45 \
    "bash '$OC_KIT/cli.sh' --state '$OC_STATE' -- tui --session agent:main:main"
trap 'tmux kill-session -t "$SESSION" 2>/dev/null; cleanup' EXIT

screen() { tmux capture-pane -p -t "$SESSION" 2>/dev/null; }

# wait_for REGEX SECONDS: until the screen matches (extended regex), polling every 0.2 s.
wait_for() {
    local regex=$1 tries=$(($2 * 5)) i
    for ((i = 0; i < tries; i++)); do
        screen | grep -Eq -- "$regex" && return 0
        sleep 0.2
    done
    return 1
}

wait_for 'connected \| idle' 60 || {
    echo "the TUI did not connect; screen:" >&2
    screen >&2
    exit 1
}

IDLE=0
for n in $(seq 1 "$TURNS"); do
    tmux send-keys -t "$SESSION" -l "@reply tui-turn-$n"
    tmux send-keys -t "$SESSION" Enter
    if ! wait_for "^ *tui-turn-$n\$" 30; then
        echo "turn $n: no reply"
        screen >"$RUN/turn-$n.screen"
        continue
    fi
    # The reply is shown; the status line must come back to idle (it stays on a spinner, or
    # says "waiting", when the TUI still thinks a run is going).
    # Checked twice, a second apart: the bug turned idle back into "waiting" when the late
    # answer to the send arrived.
    if wait_for 'connected \| idle' 10 && sleep 1 && wait_for 'connected \| idle' 1; then
        echo "turn $n: idle"
        IDLE=$((IDLE + 1))
    else
        echo "turn $n: still busy"
        screen >"$RUN/turn-$n.screen"
    fi
done

echo "ended idle $IDLE of $TURNS (screens of failed turns in $RUN)"
emit "{\"bench\":\"tui_turns\",\"turns\":$TURNS,\"idle\":$IDLE}" >/dev/null
[[ $IDLE == "$TURNS" ]]
