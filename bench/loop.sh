#!/usr/bin/env bash
# Nodes per second on mcpGraph's loop example (`sum_to_n`, 2n+3 nodes for n iterations), with
# the node and time limits raised (bench/configs/loop_big*.yaml).
#   mcpflow:  `mcpflow run` wall time for n = 10 and n = N_BIG (process start and config load
#             included), and the tool-call latency over MCP (`mcpflow serve`) for n = 10,
#             mcpGraph's sizes and N_BIG;
#   mcpGraph: tool-call latency over MCP (`npx mcpgraph@0.1.23 -g …`) for n = 10, 1000 and 3000
#             (it is about 1 node/ms and quadratic in the loop's length, so 100,000 is out of reach).
# Every figure is the median of several runs. nodes/s = history records / seconds.
#
#   bench/loop.sh                    # N_BIG=100000
#   N_BIG=20000 RUNS=3 bench/loop.sh
#   SKIP_BUILD=1 bench/loop.sh
set -euo pipefail
source "$(dirname "$0")/common.sh"

N_BIG=${N_BIG:-100000}
RUNS=${RUNS:-5}          # mcpflow runs per n
MG_RUNS=${MG_RUNS:-3}    # mcpGraph calls per n (n = 3000 takes tens of seconds each)
MG_NS=${MG_NS:-10 1000 3000}
CFG=bench/configs/loop_big.yaml
MG_CFG=bench/configs/loop_big_mcpgraph.yaml
need jq "to read JSON"
need npx "to run mcpGraph"
build_release

records() { echo $((2 * $1 + 3)); }
sum() { echo $(($1 * ($1 + 1) / 2)); }

# The record count is measured, not assumed: --history on small n must match 2n+3.
for n in 3 10; do
    got=$(mcpflow run "$CFG" sum_to_n --args "{\"n\": $n}" --history | jq '.history | length')
    [[ "$got" == "$(records "$n")" ]] || { echo "bench: n=$n gave $got records, expected $(records "$n")" >&2; exit 1; }
done
echo "# history records: n=3 -> $(records 3), n=10 -> $(records 10) (2n+3), checked with mcpflow run --history" >&2

rows=()
row() { # engine how n seconds
    local nodes
    nodes=$(records "$3")
    rows+=("$(printf '%s\t%s\t%s\t%s\t%.6f\t%.0f' "$1" "$2" "$3" "$nodes" "$4" "$(awk -v a="$nodes" -v b="$4" 'BEGIN { print a / b }')")")
}

# mcpflow run: whole-process wall time.
for n in 10 "$N_BIG"; do
    times=()
    for ((i = 0; i < RUNS; i++)); do
        t0=$EPOCHREALTIME
        result=$(mcpflow run "$CFG" sum_to_n --args "{\"n\": $n}")
        times+=("$(since "$t0")")
        [[ $(jq -c .sum <<<"$result") == "$(sum "$n")" ]] || { echo "bench: mcpflow run n=$n gave $result" >&2; exit 1; }
    done
    echo "# mcpflow run n=$n: ${times[*]} s" >&2
    row mcpflow "run (wall)" "$n" "$(median "${times[@]}")"
done

# One tool call over MCP: p50 of RUNS calls (after one warm-up call), server already running.
over_mcp() { # engine n runs warmup command…
    local engine=$1 n=$2 runs=$3 warmup=$4 line
    shift 4
    line=$(mcpflow-bench latency --calls "$runs" --warmup "$warmup" --tool sum_to_n --args "{\"n\": $n}" --label "$engine" -- "$@")
    echo "$line" >&2
    [[ $(jq -c .result.sum <<<"$line") == "$(sum "$n")" ]] || { echo "bench: $engine n=$n answered $line" >&2; exit 1; }
    row "$engine" "MCP call (p50)" "$n" "$(jq .p50_us/1e6 <<<"$line")"
}
# mcpflow at mcpGraph's sizes too, so that each ratio can compare the same n.
for n in $(printf '%s\n' 10 $MG_NS "$N_BIG" | sort -nu); do
    if ((n <= 1000)); then over_mcp mcpflow "$n" 200 50 mcpflow serve "$CFG"; else over_mcp mcpflow "$n" "$RUNS" 1 mcpflow serve "$CFG"; fi
done
for n in $MG_NS; do
    # shellcheck disable=SC2086 # MCPGRAPH is a command line
    over_mcp "mcpGraph 0.1.23" "$n" "$MG_RUNS" "$([[ $n -le 1000 ]] && echo 1 || echo 0)" $MCPGRAPH -g "$MG_CFG"
done

machine_line
echo "# medians; nodes = history records (2n+3)"
{
    printf 'engine\thow\tn\tnodes\tseconds\tnodes/s\n'
    printf '%s\n' "${rows[@]}"
} | column -t -s $'\t'
printf '%s\n' "${rows[@]}" | awk -F'\t' -v big="$N_BIG" '
    $1 == "mcpflow" && $2 ~ /MCP/ { flow[$3] = $6 }
    $1 ~ /mcpGraph/ { mg[$3] = $6; order[++k] = $3 }
    END {
        for (i = 1; i <= k; i++) {
            n = order[i]
            printf "n=%s: mcpflow / mcpGraph = %.0fx nodes/s (mcpflow at n=%s: %.0fx)\n", n, flow[n] / mg[n], big, flow[big] / mg[n]
        }
    }'
