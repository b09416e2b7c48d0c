#!/usr/bin/env bash
# What telemetry costs per call: the same graph tool (bench/configs/telemetry.yaml: one upstream
# call and a transform) over Streamable HTTP, with telemetry off, with metrics on (the
# default), and with metrics and tracing on at 100 % sampling to a local OTLP/HTTP sink
# (bench/otlp_sink.py). The modes alternate for ROUNDS rounds (one server per round and
# mode) so drift on the shared cores hits each alike; the table gives each mode's median
# calls/s and server CPU per call, and the CPU ratio to "off".
#
#   bench/telemetry.sh                        # 3 rounds, 10 s each, 16 clients
#   ROUNDS=5 SECONDS_PER_RUN=5 CLIENTS=1 bench/telemetry.sh
#   INSTRUCTIONS=1 SKIP_BUILD=1 bench/telemetry.sh   # also callgrind's Ir per call per mode
#   BASELINE=/tmp/mcpflow-before bench/telemetry.sh  # adds "tracing-baseline": tracing on, served
#                                                    # by an earlier build, for a before/after
#   PIN=0 bench/telemetry.sh                  # server, clients and sink share every core
#
# With two cores or more (PIN=1, the default there) the server runs on core 0 and the load
# generator and the OTLP sink on the others: sharing cores with 16 client threads moved the
# server's CPU per call by ±15 % between rounds of one mode. The batch exporter keeps the SDK's
# export size (512 spans) and only its queue is raised, so no span is dropped.
#
# A measurement, not a test.
set -euo pipefail
source "$(dirname "$0")/common.sh"
need jq "to read mcpflow-bench's JSON lines"
need python3 "the OTLP sink"
build_release
machine_line

rounds=${ROUNDS:-3}
secs=${SECONDS_PER_RUN:-10}
clients=${CLIENTS:-16}
work=$(mktemp -d)
sink_pid=
trap '[[ -n $sink_pid ]] && kill $sink_pid 2>/dev/null; rm -rf "$work"' EXIT

# Prefixes that put a command on its cores (taskset execs it, so `$!` stays the command's pid).
on_server=() on_load=()
if [[ ${PIN:-$(($(nproc) > 1))} == 1 ]] && command -v taskset >/dev/null; then
    on_server=(taskset -c 0) on_load=(taskset -c "1-$(($(nproc) - 1))")
    echo "# server on core 0, load generator and sink on the others" >&2
fi

"${on_load[@]}" python3 bench/otlp_sink.py >"$work/sink.out" &
sink_pid=$!
for _ in $(seq 50); do grep -q '^port ' "$work/sink.out" && break; sleep 0.1; done
sink_port=$(sed -n 's/^port //p' "$work/sink.out")
[[ -n $sink_port ]] || { echo "bench: the OTLP sink did not start" >&2; exit 1; }

config() { # mode -> path of its config
    local path="$work/$1.yaml"
    cp bench/configs/telemetry.yaml "$path"
    case $1 in
        off) echo 'telemetry: { metrics: { enabled: false } }' >>"$path" ;;
        metrics) ;;
        tracing | tracing-baseline) printf 'telemetry:\n  traces: { endpoint: "http://127.0.0.1:%s", protocol: "http/protobuf", samplingRatio: 1 }\n' "$sink_port" >>"$path" ;;
    esac
    echo "$path"
}

# The batch processor's queue (2,048 spans by default) drops spans at thousands of calls/s; a
# larger one keeps every span, which is what a 100 % sampling rate means. Exports keep the
# SDK's size (512 spans; 8,192 cost more CPU than callgrind counts, bench/README.md).
export OTEL_BSP_MAX_QUEUE_SIZE=65536 OTEL_BSP_SCHEDULE_DELAY=500

results="$work/results.jsonl"
modes="off metrics tracing"
if [[ -n ${BASELINE:-} ]]; then
    [[ -x $BASELINE ]] || { echo "bench: BASELINE=$BASELINE is not an executable" >&2; exit 1; }
    modes="$modes tracing-baseline"
fi
for round in $(seq "$rounds"); do
    for mode in $modes; do
        log="$work/serve-$mode-$round.log"
        bin="$REL/mcpflow"
        [[ $mode == tracing-baseline ]] && bin=$BASELINE
        "${on_server[@]}" "$bin" serve "$(config $mode)" --http 127.0.0.1:0 2>"$log" &
        server=$!
        url=$(listen_url "$log" 100)
        line=$("${on_load[@]}" "$REL/mcpflow-bench" http --url "$url" --tool add --args '{"a": 1, "b": 2}' \
            --protocol 2026-07-28 --clients "$clients" --seconds "$secs" --server-pid "$server")
        kill -INT "$server"; wait "$server" || true
        jq -c --arg mode "$mode" --argjson round "$round" '. + {mode: $mode, round: $round}' <<<"$line" | tee -a "$results" >&2
    done
done

echo "| telemetry | calls/s (median) | server CPU µs/call (median) | CPU vs off | p50 µs | p99 µs |"
echo "|---|---|---|---|---|---|"
jq -rs '
  def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  (map(select(.mode == "off")) | map(.server_cpu_us) | median) as $off
  | group_by(.mode) | map({mode: .[0].mode, cps: (map(.calls_per_s) | median),
      cpu: (map(.server_cpu_us) | median), p50: (map(.p50_us) | median), p99: (map(.p99_us) | median)})
  | sort_by({off: 0, metrics: 1, tracing: 2, "tracing-baseline": 3}[.mode])
  | .[] | "| \(.mode) | \(.cps | round) | \(.cpu * 10 | round / 10) | \(((.cpu / $off - 1) * 1000 | round) / 10) % | \(.p50 | round) | \(.p99 | round) |"' "$results"
# Each round's CPU per call against that round's "off": drift between rounds cancels out.
jq -rs '
  def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  (map(select(.mode == "off")) | map({key: (.round | tostring), value: .server_cpu_us}) | from_entries) as $off
  | map(select(.mode != "off")) | group_by(.mode) | .[]
  | map(.server_cpu_us / $off[.round | tostring]) as $ratios
  | "# \(.[0].mode) / off, round by round: \($ratios | map(. * 100 | round / 100) | join(" ")); median \((($ratios | median) - 1) * 1000 | round / 10) %"' "$results"

if [[ ${INSTRUCTIONS:-0} == 1 ]]; then
    for mode in $modes; do
        bin="$REL/mcpflow"
        [[ $mode == tracing-baseline ]] && bin=$BASELINE
        MCPFLOW=$bin CONFIG=$(config $mode) PROTOCOL=2026-07-28 SKIP_BUILD=1 bash bench/instructions.sh http |
            jq -c --arg mode "$mode" '. + {telemetry: $mode}'
    done
fi
kill -TERM "$sink_pid" 2>/dev/null && wait "$sink_pid" 2>/dev/null || true
sink_pid=
echo "# OTLP sink: $(tail -n 1 "$work/sink.out")" >&2
