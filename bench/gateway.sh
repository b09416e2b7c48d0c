#!/usr/bin/env bash
# The gateway's cost, in one run: the fixture's `echo` called (a) directly, (b) through
# `mcpflow serve bench/configs/gateway.yaml` (pass-through as `fx__echo`) and (c) the same with a
# blocking JavaScript pre hook (bench/configs/gateway_hook.yaml), each at 1, 16 and 256 calls in
# flight over one MCP session. Prints p50/p99 per row, calls/s, and the p50/p99 the gateway
# adds over the direct row at the same concurrency.
#
#   bench/gateway.sh                      # 20000 measured calls per row (5000 warm-up)
#   CALLS=5000 SKIP_BUILD=1 bench/gateway.sh
#
# A measurement, not a test: it checks only that every row answers {"x":21}.
set -euo pipefail
source "$(dirname "$0")/common.sh"

CALLS=${CALLS:-20000}
LEVELS=${LEVELS:-"1 16 256"}
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

for c in $LEVELS; do
    measure direct "$c" echo mcpflow-fixture
    measure gateway "$c" fx__echo mcpflow serve bench/configs/gateway.yaml
    measure gateway+hook "$c" fx__echo mcpflow serve bench/configs/gateway_hook.yaml
done

machine_line
echo "# $CALLS measured calls per row over one stdio session; latencies in µs; added = row − direct at the same concurrency"
jq -rs '
  def f: . * 10 | round / 10 | tostring;
  (map(select(.label == "direct")) | map({key: (.concurrency|tostring), value: .}) | from_entries) as $d
  | (["run", "in flight", "p50", "p99", "calls/s", "added p50", "added p99"] | @tsv),
    (.[] | . as $r | $d[(.concurrency|tostring)] as $base
      | [.label, (.concurrency|tostring), (.p50_us|f), (.p99_us|f), (.calls_per_s|round|tostring),
         (if .label == "direct" then "" else ((.p50_us - $base.p50_us)|f) end),
         (if .label == "direct" then "" else ((.p99_us - $base.p99_us)|f) end)] | @tsv)
' "$out" | column -t -s $'\t'
