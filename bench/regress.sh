#!/usr/bin/env bash
# Before a commit: did instructions per call grow? Runs bench/instructions.sh for each scenario
# (a graph tool over HTTP in both spec eras, the stdio gateway pass-through, the same with a
# JavaScript hook, a traced graph call) and compares each with bench/baseline.json, recorded on
# an earlier commit. Counted by callgrind, so the verdict does not depend on what else the
# machine is doing; a measurement for a developer, not a CI gate.
#
#   bench/regress.sh                 # compare; exit 1 when a scenario grew past TOLERANCE
#   bench/regress.sh --record        # measure and write bench/baseline.json (commit it)
#   TOLERANCE=3 SKIP_BUILD=1 bench/regress.sh http-2026 gateway   # some scenarios only
#
# What is compared: all Ir per call. The split instructions.sh prints (memcpy and the rest) is
# shown but not judged: on one binary it moved by ±18 % between two runs while the total moved
# by under 2 %. Each scenario is one client (a repeatable interleaving) and the median of
# REPEAT (3) runs.
set -euo pipefail
source "$(dirname "$0")/common.sh"
need jq "to read and write the baseline"
build_release
export SKIP_BUILD=1

record=0
if [[ ${1:-} == --record ]]; then record=1; shift; fi
baseline=bench/baseline.json
tolerance=${TOLERANCE:-5}
repeat=${REPEAT:-3}
all=(http-2025 http-2026 gateway gateway-hook traced)
scenarios=("$@")
[[ ${#scenarios[@]} -gt 0 ]] || scenarios=("${all[@]}")

work=$(mktemp -d)
sink_pid=
trap '[[ -n $sink_pid ]] && kill $sink_pid 2>/dev/null; rm -rf "$work"' EXIT

# The traced scenario exports every span to a local OTLP sink, as bench/telemetry.sh does.
traced=$work/traced.yaml
if [[ " ${scenarios[*]} " == *" traced "* ]]; then
    need python3 "the OTLP sink of the traced scenario"
    python3 bench/otlp_sink.py >"$work/sink.out" &
    sink_pid=$!
    for _ in $(seq 50); do grep -q '^port ' "$work/sink.out" && break; sleep 0.1; done
    port=$(sed -n 's/^port //p' "$work/sink.out")
    [[ -n $port ]] || { echo "regress: the OTLP sink did not start" >&2; exit 1; }
    cp bench/configs/telemetry.yaml "$traced"
    printf 'telemetry:\n  traces: { endpoint: "http://127.0.0.1:%s", protocol: "http/protobuf", samplingRatio: 1 }\n' \
        "$port" >>"$traced"
fi

measure_once() { # scenario -> one JSON line of instructions.sh
    local common=(env CLIENTS=1 LOW=100 HIGH=600)
    case $1 in
        http-2025) "${common[@]}" PROTOCOL=2025-11-25 bash bench/instructions.sh http ;;
        http-2026) "${common[@]}" PROTOCOL=2026-07-28 bash bench/instructions.sh http ;;
        gateway) "${common[@]}" bash bench/instructions.sh gateway ;;
        gateway-hook) "${common[@]}" bash bench/instructions.sh gateway_hook ;;
        traced)
            OTEL_BSP_MAX_QUEUE_SIZE=65536 OTEL_BSP_MAX_EXPORT_BATCH_SIZE=8192 OTEL_BSP_SCHEDULE_DELAY=500 \
                "${common[@]}" PROTOCOL=2026-07-28 CONFIG="$traced" bash bench/instructions.sh http ;;
        *) echo "regress: unknown scenario '$1' (${all[*]})" >&2; exit 2 ;;
    esac
}

measure() { # scenario -> {scenario, total, rest, memcpy}: the medians of REPEAT runs
    local runs=()
    for _ in $(seq "$repeat"); do runs+=("$(measure_once "$1")"); done
    printf '%s\n' "${runs[@]}" | jq -sc --arg s "$1" '
      def median: sort | .[length / 2 | floor];
      {scenario: $s, total: (map(.ir_per_call) | median), rest: (map(.rest_ir_per_call) | median),
       memcpy: (map(.memcpy_ir_per_call) | median), commit: .[0].commit}'
}

results=$work/results.jsonl
for s in "${scenarios[@]}"; do
    echo "regress: $s ($repeat runs)" >&2
    measure "$s" | tee -a "$results" >&2
done

if [[ $record == 1 ]]; then
    jq -s --arg machine "$(uname -m) $(nproc) cores" \
        '{recorded_on: .[0].commit, machine: $machine,
          scenarios: (map({key: .scenario, value: {total, rest, memcpy}}) | from_entries)}' \
        "$results" >"$work/baseline.json"
    if [[ -f $baseline ]]; then # keep the scenarios not measured this time
        jq -s '.[0] * .[1]' "$baseline" "$work/baseline.json" >"$work/merged.json"
        mv "$work/merged.json" "$work/baseline.json"
    fi
    mv "$work/baseline.json" "$baseline"
    echo "regress: wrote $baseline" >&2
    exit 0
fi

[[ -f $baseline ]] || { echo "regress: no $baseline; record one with --record" >&2; exit 2; }
echo "| scenario | Ir/call | baseline | change | of which memcpy (now / baseline) |"
echo "|---|---|---|---|---|"
verdict=$(jq -rs --slurpfile base "$baseline" --argjson tol "$tolerance" '
  def pct(a; b): if b == 0 then 0 else ((a / b - 1) * 1000 | round) / 10 end;
  map(. as $r | $base[0].scenarios[$r.scenario] as $b
      | if $b == null then {line: "| \($r.scenario) | \($r.total) | – | – | \($r.memcpy) / – |", bad: false}
        else {line: "| \($r.scenario) | \($r.total) | \($b.total) | \(pct($r.total; $b.total)) % | \($r.memcpy) / \($b.memcpy) |",
              bad: (pct($r.total; $b.total) > $tol)} end)
  | (map(.line) | join("\n")) + "\n" + (if any(.bad) then "REGRESSED" else "OK" end)' "$results")
echo "${verdict%$'\n'*}"
if [[ ${verdict##*$'\n'} == REGRESSED ]]; then
    echo "regress: instructions per call grew past ${tolerance} % against $(jq -r .recorded_on "$baseline")" >&2
    exit 1
fi
echo "regress: within ${tolerance} % of $(jq -r .recorded_on "$baseline")" >&2
