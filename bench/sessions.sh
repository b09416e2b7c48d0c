#!/usr/bin/env bash
# Durable sessions: start + continue round trips per second of a tool that calls an upstream and
# waits once (bench/configs/sessions.yaml), on SQLite (a file, WAL, synchronous=FULL) and on
# PostgreSQL, with each of CLIENTS round trips in flight at once (concurrent calls over one
# stdio session); then bytes stored per waiting session (LEAVE sessions left waiting in an
# empty store, divided into the store's footprint).
#
#   bench/sessions.sh                       # 1000 round trips at 1 and 64 clients, 1000 left waiting
#   ROUNDS=200 LEAVE=0 CLIENTS=64 bench/sessions.sh    # LEAVE=0: no bytes-per-session part
#   MCPFLOW=/other/build/mcpflow SKIP_BUILD=1 bench/sessions.sh  # another build's server
#   PG=postgres://postgres@127.0.0.1:5432/test bench/sessions.sh   # the default PostgreSQL
#
# A measurement, not a test. The PostgreSQL schema it creates is dropped at the end.
set -euo pipefail
source "$(dirname "$0")/common.sh"

ROUNDS=${ROUNDS:-1000}
LEAVE=${LEAVE:-1000}
CLIENTS=${CLIENTS:-1,64}
# Other builds to measure (e.g. a baseline's server against this bench client): paths.
MCPFLOW=${MCPFLOW:-mcpflow}
MCPFLOW_BENCH=${MCPFLOW_BENCH:-mcpflow-bench}
PG=${PG:-postgres://postgres@127.0.0.1:5432/test}
need jq "to read mcpflow-bench's JSON lines"
need psql "to drop the PostgreSQL schema afterwards"
build_release
machine_line

tmp=$(mktemp -d)
schema="bench_sessions_$$"
trap 'rm -rf "$tmp"; psql "$PG" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true' EXIT
cp bench/configs/sessions.yaml "$tmp/sessions.yaml"

run() { # label store-url clients
    local label=$1 url=$2 clients=$3 line
    line=$("$MCPFLOW_BENCH" sessions --rounds "$ROUNDS" --warmup 100 --clients "$clients" \
        --tool approve --args '{"n": 7}' --input '{"ok": true}' --label "$label" \
        -- "$MCPFLOW" serve "$tmp/sessions.yaml" --store "$url")
    [[ $(jq -c .result <<<"$line") == '{"n":7,"ok":true}' ]] || { echo "bench: $label answered $line" >&2; exit 1; }
    stats=$("$MCPFLOW" runs stats --store "$url" --json)
    waiting=$(jq '.sessions.waiting' <<<"$stats")
    echo "$line" >&2
    printf '%-10s %3s clients %9s round trips/s   p50 %9s us   p99 %9s us   server CPU %7s us/round trip   (%s waiting)\n' \
        "$label" "$clients" "$(jq .round_trips_per_s <<<"$line")" "$(jq .p50_us <<<"$line")" \
        "$(jq .p99_us <<<"$line")" "$(jq .server_cpu_us <<<"$line")" "$waiting"
}

IFS=, read -ra client_counts <<<"$CLIENTS"
for clients in "${client_counts[@]}"; do
    run sqlite "sqlite://$tmp/state-$clients.db" "$clients"
    run postgres "$PG?schema=$schema" "$clients"
    psql "$PG" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null
done

[[ $LEAVE -gt 0 ]] || exit 0
# Bytes per waiting session: only waiting sessions in a fresh store.
per_waiting() { # label url
    local label=$1 url=$2 stats total
    "$MCPFLOW_BENCH" sessions --rounds 1 --warmup 0 --leave "$LEAVE" --tool approve \
        --args '{"n": 7}' --input '{"ok": true}' -- "$MCPFLOW" serve "$tmp/sessions.yaml" --store "$url" >/dev/null
    stats=$("$MCPFLOW" runs stats --store "$url" --json)
    total=$(jq '.footprint.runsBytes + .footprint.recordsBytes + .footprint.sessionsBytes' <<<"$stats")
    printf '%-10s %8s bytes per waiting session (%s sessions, one finished run)\n' "$label" "$((total / LEAVE))" "$LEAVE"
}
per_waiting sqlite "sqlite://$tmp/fresh.db"
psql "$PG" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null
per_waiting postgres "$PG?schema=$schema"
