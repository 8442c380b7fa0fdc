#!/usr/bin/env bash
# The system calls of a gateway start (BENCHMARKS.md, issue 38): `strace -c -f` from spawn until
# the gateway prints where it listens, plus AFTER seconds of idle; then it is killed with SIGKILL
# so that the stop's own work (the session index written at stop) is not counted.
#
#   bench/start_syscalls.sh STATE_DIR [STATE_DIR …]   one summary per state dir (made if absent)
#
# Environment: SKIP_BUILD=1, CARGO_TARGET_DIR, BENCH_DIR as in lib.sh; AFTER (default 0.5 s).
# Needs strace (Debian's package). Prints each dir's counts of the calls that touch files and the
# total; the whole `strace -c` table is kept in the run dir.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v strace >/dev/null || { echo "strace not found (apt-get install strace)" >&2; exit 1; }

for dir in "$@"; do
    out="$RUN/strace-$(basename "$dir").txt"
    strace -c -f -o "$out" "$BIN" --state-dir "$dir" gateway --port 0 >"$out.stdout" 2>"$out.stderr" &
    tracer=$!
    for _ in $(seq 1 600); do
        grep -q "listening on" "$out.stdout" 2>/dev/null && break
        sleep 0.05
    done
    sleep "${AFTER:-0.5}"
    kill -KILL "$(pgrep -P "$tracer")"
    wait "$tracer" 2>/dev/null || true
    echo "== $dir"
    grep -E " (getdents64|statx|newfstatat|openat|pread64|read|total)$" "$out"
done
