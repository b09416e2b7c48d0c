#!/usr/bin/env bash
# Instructions per trivial hook call inside the sandbox (`function (ctx) { return ctx; }`, the
# gateway's request context as input, one worker, calls back to back), counted by callgrind:
# the same binary at LOW and HIGH calls, (HIGH total − LOW total) / (HIGH − LOW). The worker's
# own work after each reply (draining, replacing isolates) is in it: the figure is what a call
# costs the process, not only what its caller waits for.
#   LOW=200 HIGH=2200 bench/sandbox.sh
set -euo pipefail
source "$(dirname "$0")/common.sh"
need valgrind "callgrind counts the instructions"
need jq "to find the bench binary in cargo's messages"
LOW=${LOW:-200}
HIGH=${HIGH:-2200}
bin=$(cargo build --profile "$BENCH_PROFILE" -p mcpflow-sandbox --bench instructions --message-format=json 2>/dev/null |
    jq -r 'select(.executable != null and .target.name == "instructions") | .executable' | tail -n 1)
[[ -x $bin ]] || { echo "bench: the sandbox's instructions bench did not build" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
total() { # calls
    valgrind --tool=callgrind --callgrind-out-file="$work/out" "$bin" "$1" 2>/dev/null
    sed -n 's/^summary: *//p; s/^totals: *//p' "$work/out" | head -n 1 | cut -d' ' -f1
}
low=$(total "$LOW")
high=$(total "$HIGH")
echo "sandbox hook call: $(( (high - low) / (HIGH - LOW) )) instructions per call ($LOW calls: $low, $HIGH calls: $high)"
