#!/usr/bin/env bash
# One replica against three (issue #19): `mcpflow serve --http` replicas on one PostgreSQL (a
# schema of its own, dropped at the end) behind HAProxy, configured as the README's "Running a
# fleet", loaded through HAProxy by mcpflow-bench (`add`, entry → transform → exit, whose runs
# are recorded in the store once each, off the request path). Each line: calls/s, latency, and
# PostgreSQL transactions committed per call (pg_stat_database, the whole database: keep other
# work off it while measuring).
#
#   bench/fleet.sh                          # profiling (release) build, 1 and 3 replicas, 16 clients, 5 s
#   REPLICAS="1 2 3" CLIENTS=1,16,64 SECONDS_PER_RUN=10 SKIP_BUILD=1 bench/fleet.sh
#   PROFILE=debug SKIP_BUILD=1 bench/fleet.sh   # the debug build (only ratios mean anything)
#
# A measurement, not a test: it checks only that every call answers a result.
set -euo pipefail
source "$(dirname "$0")/common.sh"
need haproxy "apt-get install haproxy"
need psql "apt-get install postgresql-client"
if [[ "${PROFILE:-release}" == debug ]]; then
    REL="$CARGO_TARGET_DIR/debug"
    export PATH="$REL:$PATH"
else
    build_release
fi
machine_line

PG=${MCPFLOW_TEST_PG:-postgres://postgres@127.0.0.1:5432/test}
schema="bench_fleet_$$"
store="$PG?schema=$schema"
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    psql "$PG" -qAtc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
commits() { psql "$PG" -qAtc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"; }
runs() { psql "$PG" -qAtc "SELECT count(*) FROM $schema.runs" 2>/dev/null || echo 0; }

secs=${SECONDS_PER_RUN:-5}
for n in ${REPLICAS:-1 3}; do
    servers=""
    for i in $(seq 0 $((n - 1))); do
        port=$(free_port)
        "$REL/mcpflow" serve bench/configs/http.yaml --http "127.0.0.1:$port" --store "$store" \
            --instance "bench$i" 2>"$work/r$i.log" &
        pids+=($!)
        listen_url "$work/r$i.log" 100 >/dev/null
        servers+="    server r$i 127.0.0.1:$port check"$'\n'
    done
    front=$(free_port)
    cat >"$work/haproxy.cfg" <<EOF
global
    maxconn 8192
defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    retries 3
    retry-on conn-failure
    option redispatch 1
    option http-server-close
    http-reuse never
frontend mcp
    bind 127.0.0.1:$front
    default_backend mcpflow
backend mcpflow
    balance roundrobin
    option httpchk
    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1
    http-check expect status 200
    default-server inter 200ms fall 2 rise 2
    stick-table type string len 128 size 100k expire 1h
    stick match req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)
$servers
EOF
    haproxy -db -f "$work/haproxy.cfg" 2>"$work/haproxy.log" &
    hap=$!
    pids+=($hap)
    sleep 1
    before=$(commits)
    runs_before=$(runs)
    "$REL/mcpflow-bench" http --url "http://127.0.0.1:$front/mcp" --tool add \
        --args '{"a": 1, "b": 2}' --protocol 2026-07-28 --clients "${CLIENTS:-16}" --seconds "$secs" |
        sed "s/^/replicas=$n /"
    # The runs' records land in the background: wait until their count stops moving.
    runs_after=$(runs)
    for _ in $(seq 60); do
        sleep 1
        now=$(runs)
        [[ "$now" == "$runs_after" ]] && break
        runs_after=$now
    done
    after=$(commits)
    lost=$(cat "$work"/r*.log | grep -c "could not be recorded and is missing" || true)
    late=$(cat "$work"/r*.log | grep -c "could not be recorded yet" || true)
    python3 -c "
c, r = $after - $before, $runs_after - $runs_before
print(f'replicas=$n PostgreSQL: {r} runs recorded (warm-up included), {c} commits ({c / max(r, 1):.2f} per recorded run); records retried: $late, given up: $lost')"
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    pids=()
done
