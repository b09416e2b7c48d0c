#!/usr/bin/env bash
# Durable sessions: start + continue round trips per second of a tool that calls an upstream and
# waits once (bench/configs/sessions.yaml), on SQLite (a file, WAL, synchronous=FULL) and on
# PostgreSQL; then bytes stored per waiting session (LEAVE sessions left waiting in an empty
# store, divided into the store's footprint).
#
#   bench/sessions.sh                       # 1000 round trips, 1000 sessions left waiting
#   ROUNDS=200 LEAVE=200 bench/sessions.sh
#   PG=postgres://postgres@127.0.0.1:5432/test bench/sessions.sh   # the default PostgreSQL
#
# A measurement, not a test. The PostgreSQL schema it creates is dropped at the end.
set -euo pipefail
source "$(dirname "$0")/common.sh"

ROUNDS=${ROUNDS:-1000}
LEAVE=${LEAVE:-1000}
PG=${PG:-postgres://postgres@127.0.0.1:5432/test}
need jq "to read mcpflow-bench's JSON lines"
need psql "to drop the PostgreSQL schema afterwards"
build_release
machine_line

tmp=$(mktemp -d)
schema="bench_sessions_$$"
trap 'rm -rf "$tmp"; psql "$PG" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true' EXIT
cp bench/configs/sessions.yaml "$tmp/sessions.yaml"

run() { # label store-url
    local label=$1 url=$2 line bytes
    line=$(mcpflow-bench sessions --rounds "$ROUNDS" --warmup 100 --leave "$LEAVE" \
        --tool approve --args '{"n": 7}' --input '{"ok": true}' --label "$label" \
        -- mcpflow serve "$tmp/sessions.yaml" --store "$url")
    [[ $(jq -c .result <<<"$line") == '{"n":7,"ok":true}' ]] || { echo "bench: $label answered $line" >&2; exit 1; }
    stats=$(mcpflow runs stats --store "$url" --json)
    waiting=$(jq '.sessions.waiting' <<<"$stats")
    total=$(jq '.footprint.runsBytes + .footprint.recordsBytes + .footprint.sessionsBytes' <<<"$stats")
    echo "$line" >&2
    printf '%-10s %10s round trips/s   p50 %8s us   p99 %8s us   store %10s bytes for %s runs, %s waiting\n' \
        "$label" "$(jq .round_trips_per_s <<<"$line")" "$(jq .p50_us <<<"$line")" "$(jq .p99_us <<<"$line")" \
        "$total" "$((ROUNDS + 100 + LEAVE))" "$waiting"
}

run sqlite "sqlite://$tmp/state.db"
run postgres "$PG?schema=$schema"

# Bytes per waiting session: only waiting sessions in a fresh store.
per_waiting() { # label url
    local label=$1 url=$2 stats total
    mcpflow-bench sessions --rounds 1 --warmup 0 --leave "$LEAVE" --tool approve \
        --args '{"n": 7}' --input '{"ok": true}' -- mcpflow serve "$tmp/sessions.yaml" --store "$url" >/dev/null
    stats=$(mcpflow runs stats --store "$url" --json)
    total=$(jq '.footprint.runsBytes + .footprint.recordsBytes + .footprint.sessionsBytes' <<<"$stats")
    printf '%-10s %8s bytes per waiting session (%s sessions, one finished run)\n' "$label" "$((total / LEAVE))" "$LEAVE"
}
per_waiting sqlite "sqlite://$tmp/fresh.db"
psql "$PG" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null
per_waiting postgres "$PG?schema=$schema"
