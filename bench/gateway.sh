#!/usr/bin/env bash
# The gateway's cost, in one run: the fixture's `echo` called (a) directly, (b) through
# `mcpflow serve bench/configs/gateway.yaml` (pass-through as `fx__echo`) and (c) the same with a
# blocking JavaScript pre hook (bench/configs/gateway_hook.yaml), each at 1, 16 and 256 calls in
# flight over one MCP session. Prints p50/p99 per row, calls/s, and the p50/p99 the gateway
# adds over the direct row at the same concurrency; then, per call, the CPU time of the server
# side (mcpflow and the fixture it started, or the fixture alone), the time runnable threads
# waited for a core (load from other processes: what makes wall-clock rows of one run differ
# from another's) and the context switches (wake-ups).
#
#   bench/gateway.sh                      # 20000 measured calls per row (5000 warm-up)
#   CALLS=5000 SKIP_BUILD=1 bench/gateway.sh
#   ROUNDS=3 LEVELS=1 bench/gateway.sh    # rows interleaved 3 times; medians, calls/s range
#   ROWS="direct gateway" bench/gateway.sh
#
# A measurement, not a test: it checks only that every row answers {"x":21}.
set -euo pipefail
source "$(dirname "$0")/common.sh"

CALLS=${CALLS:-20000}
LEVELS=${LEVELS:-"1 16 256"}
ROUNDS=${ROUNDS:-1}
ROWS=${ROWS:-"direct gateway gateway+hook"}
need jq "to read mcpflow-bench's JSON lines"
build_release

out=$(mktemp)
trap 'rm -f "$out"' EXIT

measure() { # label concurrency tool command…
    local label=$1 conc=$2 tool=$3
    shift 3
    echo "# $label c=$conc: $*" >&2
    local line
    line=$(mcpflow-bench concurrent --calls "$CALLS" --concurrency "$conc" --tool "$tool" \
        --args '{"x": 21}' --label "$label" -- "$@")
    if [[ $(jq -c .result <<<"$line") != '{"x":21}' ]]; then
        echo "bench: $label answered $(jq -c .result <<<"$line")" >&2
        exit 1
    fi
    echo "$line" | tee -a "$out" >&2
}

row() { # label concurrency
    case $1 in
        direct) measure direct "$2" echo mcpflow-fixture ;;
        gateway) measure gateway "$2" fx__echo mcpflow serve bench/configs/gateway.yaml ;;
        gateway+hook) measure gateway+hook "$2" fx__echo mcpflow serve bench/configs/gateway_hook.yaml ;;
        *) echo "bench: unknown row $1" >&2; exit 1 ;;
    esac
}

for _ in $(seq "$ROUNDS"); do
    for c in $LEVELS; do
        for label in $ROWS; do row "$label" "$c"; done
    done
done

machine_line
echo "# $CALLS measured calls per row over one stdio session, $ROUNDS round(s): medians over rounds; latencies in µs;"
echo "# added = row − direct at the same concurrency; server CPU (the command and the upstream it started),"
echo "# of it mcpflow's own (the gateway without its upstream), run-queue wait and switches are per call"
jq -rs '
  def f: . * 10 | round / 10 | tostring;
  def med: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  group_by([.label, .concurrency]) | map({
      label: .[0].label, concurrency: .[0].concurrency,
      p50_us: (map(.p50_us) | med), p99_us: (map(.p99_us) | med),
      calls_per_s: (map(.calls_per_s) | med),
      range: ((map(.calls_per_s) | min | round | tostring) + "–" + (map(.calls_per_s) | max | round | tostring)),
      server_cpu_us: (map(.server_cpu_us // 0) | med),
      own_cpu_us: (map((.server_cpu_us // 0) - (.upstream_cpu_us // 0)) | med),
      runq_wait_us: (map(.runq_wait_us // 0) | med),
      switches: (map(.switches // 0) | med)})
  | sort_by(.concurrency, ({"direct": 0, "gateway": 1, "gateway+hook": 2}[.label] // 3))
  | (map(select(.label == "direct")) | map({key: (.concurrency|tostring), value: .}) | from_entries) as $d
  | (["run", "in flight", "p50", "p99", "calls/s", "calls/s range", "added p50", "added p99",
      "server CPU", "of it mcpflow", "run-queue wait", "switches"] | @tsv),
    (.[] | $d[(.concurrency|tostring)] as $base
      | [.label, (.concurrency|tostring), (.p50_us|f), (.p99_us|f), (.calls_per_s|round|tostring), .range,
         (if .label == "direct" or $base == null then "" else ((.p50_us - $base.p50_us)|f) end),
         (if .label == "direct" or $base == null then "" else ((.p99_us - $base.p99_us)|f) end),
         (.server_cpu_us|f), (if .label == "direct" then "" else (.own_cpu_us|f) end),
         (.runq_wait_us|f), (.switches|f)] | @tsv)
' "$out" | column -t -s $'\t'
