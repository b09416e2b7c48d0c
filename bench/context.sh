#!/usr/bin/env bash
# The bytes an agent's context receives (issue #15): a job chained call by call by the agent
# (list a directory of $FILES log files through server-filesystem, read each one, every answer
# returned to it) against one call of a graph tool that does the same job and answers a
# summary (bench/configs/context_summary.yaml); then the bytes of tools/list of a gateway over
# server-everything + server-filesystem with and without `proxy.toolSearch`.
#
#   bench/context.sh                  # 50 files
#   FILES=200 SKIP_BUILD=1 bench/context.sh
#   MCPFLOW=/work/target/debug/mcpflow bench/context.sh   # any build: bytes do not depend on it
#
# A measurement, not a test: it checks only that the graph's summary equals the one the agent
# computes from the files it read.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILES=${FILES:-50}
need python3 "the driver, bench/context.py"
need npx "the upstreams come from npm"
if [[ -z ${MCPFLOW:-} ]]; then
    if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
        echo "# cargo build --profile $BENCH_PROFILE -p mcpflow" >&2
        cargo build --profile "$BENCH_PROFILE" -p mcpflow >&2
    fi
    MCPFLOW=$REL/mcpflow
fi
[[ -x $MCPFLOW ]] || { echo "bench: $MCPFLOW is missing" >&2; exit 1; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
machine_line
python3 bench/context.py "$MCPFLOW" "$dir/logs" "$FILES"
