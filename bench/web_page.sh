#!/usr/bin/env bash
# The web page at 10,000 sessions: its weight and its time to a usable list (bench/web_page.mjs),
# on a store seeded with `switchboard dev seed`. Needs Chromium (/usr/bin/chromium or CHROMIUM)
# and playwright-core (PLAYWRIGHT_CORE, default: the copy the page tests install under target/).
#   bench/web_page.sh [sessions=10000] [runs=7]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
SESSIONS=${1:-10000}
RUNS=${2:-7}
PLAYWRIGHT_CORE=${PLAYWRIGHT_CORE:-$(ls -d "$TARGET_DIR"/tmp/web-playwright-core-*/node_modules/playwright-core 2>/dev/null | head -n1)}
[[ -d "$PLAYWRIGHT_CORE" ]] || { echo "playwright-core not found: run the page tests once (cargo test -p switchboard-cli web) or set PLAYWRIGHT_CORE" >&2; exit 1; }
export PLAYWRIGHT_CORE

STATE="$RUN/ours"
CLEANUP_DIRS=("$STATE")
echo "== seeding $SESSIONS sessions"
"$BIN" --state-dir "$STATE" dev seed --sessions "$SESSIONS" --messages-per-session 4 >/dev/null
start_gateway "$STATE"
PAGE="http://${GW_URL#ws://}/#token=$GW_TOKEN"
echo "== page $(echo "$PAGE" | sed 's/#token=.*/#token=…/'), $RUNS cold loads"
emit "$(PAGE_END='#list-end' node "$ROOT/bench/web_page.mjs" "$PAGE" '#session-list li.session' "$RUNS")"
stop_gateway
