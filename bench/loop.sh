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
#
# `bench/loop.sh per-node` measures the engine's own cost per node instead, in the terms that
# repeat on a shared machine: instructions (perf stat, user space) and CPU time (task-clock) of
# `mcpflow run` at each n of NS, minus the same at n = N_SMALL (process start, config load),
# divided by the difference in nodes. Wall-clock nodes/s are printed beside them.
#   bench/loop.sh per-node                                  # NS="1000 100000 1000000"
#   MCPFLOW=/path/to/another/mcpflow SKIP_BUILD=1 bench/loop.sh per-node   # an older binary
set -euo pipefail
source "$(dirname "$0")/common.sh"

if [[ "${1:-}" == per-node ]]; then
    N_SMALL=${N_SMALL:-10}
    NS=${NS:-1000 100000 1000000}
    RUNS=${RUNS:-3}
    CFG=bench/configs/loop_big.yaml
    need jq "to read JSON"
    need perf "to count instructions (perf stat -e instructions:u)"
    [[ -n "${MCPFLOW:-}" ]] || { build_release; MCPFLOW=$REL/mcpflow; }
    # One run of `mcpflow run` at n: "wall_s cpu_s max_rss_kb instructions".
    measure() {
        local n=$1 out t0 wall cpu
        out=$(mktemp)
        t0=$EPOCHREALTIME
        /usr/bin/time -f '%M' -o "$out.time" \
            perf stat -x, -e instructions:u,task-clock -o "$out.perf" -- \
            "$MCPFLOW" run "$CFG" sum_to_n --args "{\"n\": $n}" >"$out"
        wall=$(since "$t0")
        [[ $(jq -c .sum "$out") == $((n * (n + 1) / 2)) ]] || { echo "bench: n=$n gave $(cat "$out")" >&2; exit 1; }
        # task-clock: the process's CPU time (user + sys), in ms, to the microsecond.
        cpu=$(awk -F, '/task-clock/ { printf "%.6f", $1 / 1000 }' "$out.perf")
        echo "$wall $cpu $(cat "$out.time") $(awk -F, '/instructions/ { print $1 }' "$out.perf")"
        rm -f "$out" "$out.time" "$out.perf"
    }
    # Medians of RUNS runs at n: "wall_s cpu_s max_rss_kb instructions".
    medians() {
        local n=$1 i lines=()
        for ((i = 0; i < RUNS; i++)); do lines+=("$(measure "$n")"); done
        printf '%s\n' "${lines[@]}" | sed "s/^/# n=$n: /" >&2
        local col cols=()
        for col in 1 2 3 4; do
            cols+=("$(median $(printf '%s\n' "${lines[@]}" | awk -v c=$col '{ print $c }'))")
        done
        echo "${cols[*]}"
    }
    read -r w0 c0 _ i0 <<<"$(medians "$N_SMALL")"
    machine_line
    echo "# $MCPFLOW; medians of $RUNS runs; per node = (X(n) - X($N_SMALL)) / (nodes(n) - nodes($N_SMALL)), nodes = 2n+3"
    {
        printf 'n\tnodes\twall s\tnodes/s (wall)\tCPU s\tCPU µs/node\tnodes/s per core\tinstructions/node\tmax RSS MB\n'
        printf '%s\t%s\t%s\t%.0f\t%s\t-\t-\t-\t-\n' "$N_SMALL" $((2 * N_SMALL + 3)) "$w0" \
            "$(awk -v a=$((2 * N_SMALL + 3)) -v b="$w0" 'BEGIN { print a / b }')" "$c0"
        for n in $NS; do
            read -r w c rss ins <<<"$(medians "$n")"
            awk -v n="$n" -v w="$w" -v c="$c" -v rss="$rss" -v ins="$ins" -v n0="$N_SMALL" -v c0="$c0" -v i0="$i0" 'BEGIN {
                nodes = 2 * n + 3; d = nodes - (2 * n0 + 3)
                us = (c - c0) / d * 1e6
                printf "%d\t%d\t%s\t%.0f\t%s\t%.3f\t%.0f\t%.0f\t%.0f\n", n, nodes, w, nodes / w, c, us, (us > 0 ? 1e6 / us : 0), (ins - i0) / d, rss / 1024
            }'
        done
    } | column -t -s $'\t'
    exit 0
fi

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
