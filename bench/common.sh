# Shared by the bench scripts: build, paths, machine line, small helpers.
# Sourced, not run.

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/target}
# The scripts measure the `profiling` build (Cargo.toml): release's optimisation with line
# tables and symbols, which callgrind and perf need (the `release` a user installs is stripped).
# BENCH_PROFILE=release measures the installed build instead (instruction totals are the same;
# callgrind then names no functions).
BENCH_PROFILE=${BENCH_PROFILE:-profiling}
REL="$CARGO_TARGET_DIR/$BENCH_PROFILE"
# The graph configs name `mcpflow-fixture` bare: the bench build must come first on PATH.
export PATH="$REL:$PATH"
# mcpGraph's server command, without the `-g CONFIG` part.
MCPGRAPH=${MCPGRAPH:-npx -y mcpgraph@0.1.23}

need() {
    command -v "$1" >/dev/null 2>&1 || { echo "bench: '$1' is required ($2)" >&2; exit 1; }
}

build_release() {
    if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
        echo "# cargo build --profile $BENCH_PROFILE -p mcpflow -p mcpflow-fixture -p mcpflow-bench" >&2
        cargo build --profile "$BENCH_PROFILE" -p mcpflow -p mcpflow-fixture -p mcpflow-bench >&2
    fi
    for bin in mcpflow mcpflow-fixture mcpflow-bench; do
        [[ -x "$REL/$bin" ]] || { echo "bench: $REL/$bin is missing" >&2; exit 1; }
    done
}

machine_line() {
    local cpu
    cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//')
    # The load average is printed because other work on a 2-core machine moves every figure.
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, ${cpu:-unknown CPU}, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
}

# The URL `mcpflow serve --http` printed to its stderr (file $1), waiting up to $2 tenths of a
# second for it; exits the script with the server's stderr if it never came.
listen_url() { # log tenths
    local url=
    local seen=
    for _ in $(seq "$2"); do
        # The server's shell opens the log after this loop may first look.
        url=$(sed -n 's/^mcpflow: listening on //p' "$1" 2>/dev/null)
        # stderr is unbuffered: the line can be read half written. The same twice is whole.
        [[ -n $url && $url == "$seen" ]] && { echo "$url"; return 0; }
        seen=$url
        sleep 0.1
    done
    cat "$1" >&2
    echo "bench: the server did not start" >&2
    exit 1
}

# median of the numbers given as arguments
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# seconds elapsed since $1 (an $EPOCHREALTIME value)
since() {
    awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.6f", b - a }'
}
