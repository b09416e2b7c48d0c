#!/usr/bin/env bash
# Throughput and latency of a trivial graph tool (bench/configs/http.yaml: entry → transform →
# exit) over Streamable HTTP, at 1, 16 and 256 concurrent clients, in both spec eras; then the
# server's memory per idle session. One `mcpflow serve --http` (profiling build), one load
# generator (mcpflow-bench http, single-threaded) on the same machine. Each line also gives the
# CPU time per call of the server and of the load generator, and the run-queue wait: where the
# 2 cores went, which varies less between runs than calls/s does.
#
#   bench/http.sh                     # 5 s per run
#   SECONDS_PER_RUN=10 bench/http.sh
#   SKIP_BUILD=1 bench/http.sh        # reuse the bench binaries in $CARGO_TARGET_DIR/profiling
#
# A measurement, not a test: it checks only that every call answers a result.
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_release
machine_line

log=$(mktemp)
"$REL/mcpflow" serve bench/configs/http.yaml --http 127.0.0.1:0 2>"$log" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$log"' EXIT
url=$(listen_url "$log" 100)

secs=${SECONDS_PER_RUN:-5}
args='{"a": 1, "b": 2}'
for protocol in 2025-11-25 2026-07-28; do
    "$REL/mcpflow-bench" http --url "$url" --tool add --args "$args" --protocol "$protocol" \
        --clients 1,16,256 --seconds "$secs" --server-pid "$server"
done
"$REL/mcpflow-bench" http --url "$url" --tool add --args "$args" --clients 1 --seconds 1 \
    --server-pid "$server" --idle-sessions "${IDLE_SESSIONS:-5000}" | tail -n 1
