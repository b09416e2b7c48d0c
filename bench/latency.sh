#!/usr/bin/env bash
# Latency of one tool call over MCP stdio, three ways, in one run:
#   (a) mcpflow-fixture's `echo`, called directly: the floor (client + stdio + a trivial server);
#   (b) `echo_graph` through `mcpflow serve`: entry → mcp (fixture echo) → transform → exit;
#   (c) the same graph under mcpGraph 0.1.23 (`npx mcpgraph@0.1.23 -g …`).
# Two more rows split (b) and (c) into server overhead and graph work: (d) and (e) serve
# bench/configs/passthrough.yaml (entry → exit, no upstream) under mcpflow and mcpGraph
# (PASSTHROUGH=0 skips them).
# Prints a table of medians (p50) and p99, mcpflow's added latency (b − a) and the ratio c / b.
#
#   bench/latency.sh                 # 5000 warm-up + 5000 measured calls each
#   CALLS=1000 bench/latency.sh      # quicker
#   SKIP_BUILD=1 bench/latency.sh    # reuse the bench binaries in $CARGO_TARGET_DIR/profiling
#
# A measurement, not a test: it asserts only that each server answers what the graph computes.
set -euo pipefail
source "$(dirname "$0")/common.sh"

CALLS=${CALLS:-5000}
ARGS='{"x": 21}'
need jq "to read mcpflow-bench's JSON lines"
need npx "to run mcpGraph"
build_release

out=$(mktemp)
trap 'rm -f "$out"' EXIT

measure() { # label tool expected-result command…
    local label=$1 tool=$2 expect=$3
    shift 3
    echo "# $label: $*" >&2
    local line
    line=$(mcpflow-bench latency --calls "$CALLS" --tool "$tool" --args "$ARGS" --label "$label" -- "$@")
    if [[ $(jq -c .result <<<"$line") != "$expect" ]]; then
        echo "bench: $label answered $(jq -c .result <<<"$line"), expected $expect" >&2
        exit 1
    fi
    echo "$line" | tee -a "$out" >&2
}

measure a echo '{"x":21}' mcpflow-fixture
measure b echo_graph '{"x":21,"doubled":42}' mcpflow serve bench/configs/echo_graph.yaml
# shellcheck disable=SC2086 # MCPGRAPH is a command line
measure c echo_graph '{"x":21,"doubled":42}' $MCPGRAPH -g bench/configs/echo_graph_mcpgraph.yaml
if [[ "${PASSTHROUGH:-1}" == 1 ]]; then
    measure d passthrough '{"x":21}' mcpflow serve bench/configs/passthrough.yaml
    # shellcheck disable=SC2086
    measure e passthrough '{"x":21}' $MCPGRAPH -g bench/configs/passthrough.yaml
fi

machine_line
echo "# $CALLS warm-up + $CALLS measured sequential calls each; latencies in µs"
jq -rs '
  def name: {a: "(a) fixture echo, direct", b: "(b) mcpflow serve, echo_graph", c: "(c) mcpGraph 0.1.23, echo_graph",
    d: "(d) mcpflow serve, entry→exit", e: "(e) mcpGraph 0.1.23, entry→exit"}[.label];
  def f: . * 10 | round / 10 | tostring;
  (["run", "p50", "p90", "p99", "mean", "calls/s"] | @tsv),
  (.[] | [name, (.p50_us|f), (.p90_us|f), (.p99_us|f), (.mean_us|f), (.calls_per_s|round|tostring)] | @tsv)
' "$out" | column -t -s $'\t'
jq -rs '
  def f: . * 10 | round / 10 | tostring;
  map({key: .label, value: .}) | from_entries as $r |
  "mcpflow added latency (b - a): p50 \(($r.b.p50_us - $r.a.p50_us)|f) µs, p99 \(($r.b.p99_us - $r.a.p99_us)|f) µs",
  "mcpGraph / mcpflow (c / b):     p50 \(($r.c.p50_us / $r.b.p50_us)|f)x, p99 \(($r.c.p99_us / $r.b.p99_us)|f)x"
' "$out"
