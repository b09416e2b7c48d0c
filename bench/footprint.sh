#!/usr/bin/env bash
# What mcpflow costs at rest: the installed (stripped) binary's size and sections, and the idle
# RSS of `serve` over HTTP and over stdio (a client that initialized and then sent nothing),
# split into anonymous memory and the binary's own file pages. The #20 targets: binary ≤ 30 MB,
# idle RSS ≤ 20 MB.
#
#   bench/footprint.sh                       # build the bench profile, measure it stripped
#   SKIP_BUILD=1 MCPFLOW=/path/mcpflow bench/footprint.sh   # another build (e.g. "before")
#   CONFIG=examples/gateway.yaml WAIT=5 REPEAT=3 bench/footprint.sh
#
# The binary measured is a stripped copy of the bench build: `release` (what `cargo install`
# gives) is the same code stripped. RSS is read from /proc after WAIT (3) seconds; REPEAT (3)
# servers each, medians printed.
set -euo pipefail
source "$(dirname "$0")/common.sh"
need strip "to strip the measured copy (binutils)"
need python3 "to speak MCP over the stdio server's pipe"
[[ -n ${MCPFLOW:-} ]] || build_release
config=${CONFIG:-examples/sum.yaml}
wait_s=${WAIT:-3}
repeat=${REPEAT:-3}

work=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
bin=$work/mcpflow
cp "${MCPFLOW:-$REL/mcpflow}" "$bin"
strip -s "$bin"

machine_line
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
kb_mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
section() { # name -> bytes of that section in the stripped copy
    objdump -h "$bin" | awk -v s="$1" '$2 == s { print strtonum("0x" $3) }'
}
echo "binary (stripped): $(mb "$(stat -c %s "$bin")") MB; .text $(mb "$(section .text)") MB, .rodata $(mb "$(section .rodata)") MB, .eh_frame $(mb "$(section .eh_frame)") MB"

rss() { # pid -> "VmRSS RssAnon RssFile" in KB
    awk '/^(VmRSS|RssAnon|RssFile):/ { v[$1] = $2 } END { print v["VmRSS:"], v["RssAnon:"], v["RssFile:"] }' "/proc/$1/status"
}

http_once() {
    "$bin" serve --http 127.0.0.1:0 "$config" 2>"$work/http.log" &
    pid=$!
    listen_url "$work/http.log" 100 >/dev/null
    sleep "$wait_s"
    rss "$pid"
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}

stdio_once() {
    rm -f "$work/in"; mkfifo "$work/in"
    "$bin" serve "$config" <"$work/in" >"$work/out" 2>"$work/stdio.log" &
    pid=$!
    exec 7>"$work/in"
    printf '%s\n' \
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"footprint","version":"1"}}}' \
        '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&7
    for _ in $(seq 100); do grep -q '"id":1' "$work/out" 2>/dev/null && break; sleep 0.1; done
    grep -q '"id":1' "$work/out" || { cat "$work/stdio.log" >&2; echo "footprint: no answer to initialize" >&2; exit 1; }
    sleep "$wait_s"
    rss "$pid"
    exec 7>&-
    wait "$pid" 2>/dev/null || true; pid=
}

report() { # label function
    local total=() anon=() file=()
    for _ in $(seq "$repeat"); do
        read -r t a f < <("$2")
        total+=("$t"); anon+=("$a"); file+=("$f")
    done
    echo "$1 idle RSS: $(kb_mb "$(median "${total[@]}")") MB (anonymous $(kb_mb "$(median "${anon[@]}")") MB, file $(kb_mb "$(median "${file[@]}")") MB); runs (KB): ${total[*]}"
}
report "serve --http" http_once
report "serve (stdio)" stdio_once
