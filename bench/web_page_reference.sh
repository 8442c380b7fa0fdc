#!/usr/bin/env bash
# The reference gateway's own web page (OpenClaw's Control UI, served by the reference gateway) at
# 10,000 sessions, measured exactly like ours (bench/web_page.mjs): time to the first session row
# in the DOM, load event, bytes and requests of a cold load. Side by side with bench/web_page.sh.
#
#   bench/web_page_reference.sh [runs=7]
#
# The page is the Control UI's Sessions view, /sessions, opened directly (no click needed): its
# table asks `sessions.list {limit: 50}` and shows 25 rows a page (client-side pages of the 50
# loaded, plus a "Load more sessions" button for the next 50). A row is `tr.session-data-row`
# (light DOM). The token goes in the URL fragment (#token=…), which the page strips at start-up.
#
# The store is the one bench/compare.sh builds for its 10k size (the kit's gen_sessions.py, then
# the reference's offline `doctor --session-sqlite import`), kept under
# $BENCH_HOME/stores/openclaw-$OC_VERSION-s10k and built here once if missing (about a minute).
#
# Environment:
#   BENCH_KIT        the reference bench kit (default /work/shared/bench)
#   BENCH_HOME       the kit's install/state folder (default ~/.cache/switchboard-bench)
#   OC_VERSION       the reference release (default 2026.9.6; must keep sessions in SQLite, 2026.8+)
#   OC_PORT, MOCK_PORT   the reference gateway's and the kit mock's loopback ports (18789, 18999)
#   SESSIONS         store size (default 10000)
#   PAGE_PATH        the page's path (default /sessions; "/" measures the sidebar's list instead,
#                    with ROW_SELECTOR=.sidebar-recent-session)
#   ROW_SELECTOR     a rendered session row (default tr.session-data-row)
#   PLAYWRIGHT_CORE  playwright-core folder (default: the copy the page tests install under target/)
#   CHROMIUM         the browser (default /usr/bin/chromium)
#   SKIP_INSTALL=1   do not run the kit's install.sh (it is idempotent anyway)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KIT=${BENCH_KIT:-/work/shared/bench}
RUNS=${1:-7}
SESSIONS=${SESSIONS:-10000}
PAGE_PATH=${PAGE_PATH:-/sessions}
ROW_SELECTOR=${ROW_SELECTOR:-tr.session-data-row}
OC_PORT=${OC_PORT:-18789}
MOCK_PORT=${MOCK_PORT:-18999}
BENCH_HOME=${BENCH_HOME:-$HOME/.cache/switchboard-bench}
OC_VERSION=${OC_VERSION:-2026.9.6}
export BENCH_HOME OC_VERSION
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
PLAYWRIGHT_CORE=${PLAYWRIGHT_CORE:-$(ls -d "$TARGET_DIR"/tmp/web-playwright-core-*/node_modules/playwright-core 2>/dev/null | head -n1)}
[[ -d "$PLAYWRIGHT_CORE" ]] || { echo "playwright-core not found: run the page tests once (cargo test -p switchboard-cli web) or set PLAYWRIGHT_CORE" >&2; exit 1; }
export PLAYWRIGHT_CORE
[[ -x "$KIT/openclaw/start.sh" ]] || { echo "bench kit not found at $KIT (set BENCH_KIT)" >&2; exit 1; }

LOG=$(mktemp -d "${TMPDIR:-/tmp}/web-page-reference-XXXX")
STARTED=0
stop_ref() {
    if [[ $STARTED == 1 ]]; then
        "$KIT/openclaw/stop.sh" --port "$OC_PORT" >>"$LOG/stop.log" 2>&1 || true
        STARTED=0
    fi
}
trap stop_ref EXIT
trap 'exit 130' INT TERM

# start_ref STATE-DIR [--fresh]: start the reference on loopback; sets URL and TOKEN from what the
# kit prints.
start_ref() {
    STARTED=1
    "$KIT/openclaw/start.sh" --state "$1" "${@:2}" --port "$OC_PORT" --mock-port "$MOCK_PORT" \
        --timeout-s 1800 >"$LOG/start.log" 2>&1 || { cat "$LOG/start.log" >&2; exit 1; }
    URL=$(awk '$1 == "url" {print $2; exit}' "$LOG/start.log")
    TOKEN=$(awk '$1 == "token" {print $2; exit}' "$LOG/start.log")
    [[ $URL == ws://127.0.0.1:* && -n $TOKEN ]] || { echo "could not read url/token from start.sh:" >&2; cat "$LOG/start.log" >&2; exit 1; }
    echo "== $(head -n1 "$LOG/start.log")" >&2
}

[[ "${SKIP_INSTALL:-0}" == 1 ]] || "$KIT/openclaw/install.sh" --version "$OC_VERSION" >"$LOG/install.log" 2>&1 ||
    { cat "$LOG/install.log" >&2; exit 1; }

# The store, as bench/compare.sh's ref_store builds it (same folder and marker, so either reuses it).
STORE="$BENCH_HOME/stores/openclaw-$OC_VERSION-s$((SESSIONS / 1000))k"
if [[ ! -f "$STORE/.bench-store-complete" ]]; then
    echo "== building the reference's $SESSIONS-session store (once; kept in $STORE)" >&2
    rm -rf "$STORE" && mkdir -p "$STORE"
    t0=$SECONDS
    start_ref "$STORE" --fresh && stop_ref # writes the config and the empty state
    python3 "$KIT/gen_sessions.py" "$STORE" --count "$SESSIONS" --turns 2 --merge >>"$LOG/store.log"
    python3 "$ROOT/bench/unique_event_ids.py" "$STORE"
    "$KIT/openclaw/cli.sh" --port "$OC_PORT" --state "$STORE" -- doctor --session-sqlite import \
        --session-sqlite-all-agents >>"$LOG/store.log" 2>&1 || { cat "$LOG/store.log" >&2; exit 1; }
    echo "gen_sessions.py --count $SESSIONS --turns 2 and the import in $((SECONDS - t0)) s" >"$STORE/.bench-store-complete"
    echo "== store built in $((SECONDS - t0)) s" >&2
fi

start_ref "$STORE"
PAGE="http://${URL#ws://}${PAGE_PATH}#token=$TOKEN"
echo "== page http://${URL#ws://}${PAGE_PATH}#token=…, $RUNS cold loads, rows: $ROW_SELECTOR" >&2
node "$ROOT/bench/web_page.mjs" "$PAGE" "$ROW_SELECTOR" "$RUNS"
stop_ref
rm -rf "$LOG"
