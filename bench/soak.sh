#!/usr/bin/env bash
# Soak and abuse: N minutes of mixed load against one release `mcpflow serve --http` on
# 127.0.0.1 (bench/configs/soak.yaml, a SQLite store in a temp dir), the server's RSS, open fds,
# threads and child processes sampled every second. Driver: bench/soak.py (see its docstring
# for the load); it writes soak.csv, soak.png (matplotlib) and summary.md into --out.
#
#   bench/soak.sh                         # 30 minutes
#   bench/soak.sh --minutes 3 --out /tmp/soak
#   SKIP_BUILD=1 bench/soak.sh --minutes 3 --crash-every 100
#
# Every other option goes to soak.py (--warmup, --cooldown, --crash-every, --pause). Exits 1
# when an answer was unexpected. A measurement, not a test: never run in CI.
set -euo pipefail
source "$(dirname "$0")/common.sh"
need python3 "the driver"
out=
args=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --out) out=$2; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
out=${out:-${TMPDIR:-/tmp}/mcpflow-soak-$(date -u +%Y%m%dT%H%M)}
build_release
machine_line | tee "$out.machine" >&2

tmp=$(mktemp -d)
cp bench/configs/soak.yaml "$tmp/soak.yaml"
store="sqlite://$tmp/state.db"
# The session cap's debug line per evicted session lets the driver account for every session.
MCPFLOW_LOG=${MCPFLOW_LOG:-warn,mcpflow_server::http::sessions=debug} "$REL/mcpflow" serve "$tmp/soak.yaml" --http 127.0.0.1:0 --store "$store" \
    2>"$tmp/server.log" &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; cp "$tmp/server.log" "$out/" 2>/dev/null || true; rm -rf "$tmp"' EXIT
url=$(listen_url "$tmp/server.log" 100)
echo "# server pid $server at $url, output in $out" >&2

status=0
python3 bench/soak.py --url "$url" --pid "$server" --out "$out" \
    --stats-cmd "'$REL/mcpflow' runs stats --store '$store' --json" --server-log "$tmp/server.log" \
    "${args[@]}" || status=$?
mv "$out.machine" "$out/machine.txt"
# The server's warnings and errors by where they come from and how they start.
{
    echo
    echo "Server log, WARN and ERROR lines by source and message:"
    echo
    echo '```'
    sed -nE 's/^[^ ]+ +(WARN|ERROR|DEBUG) ([^ ]+) (.{0,60}).*/\1 \2 \3/p' "$tmp/server.log" | sort | uniq -c | sort -rn | head -n 20
    echo '```'
} | tee -a "$out/summary.md"
exit $status
