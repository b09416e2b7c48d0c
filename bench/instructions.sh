#!/usr/bin/env bash
# Instructions per call of the server side, counted by callgrind: repeatable whatever else the
# machine is doing, unlike wall clock on 2 shared cores. The server runs under
# `valgrind --tool=callgrind` twice, once for LOW and once for HIGH measured calls (each after
# a quarter as many warm-up calls); (Ir(HIGH) - Ir(LOW)) / (HIGH - LOW) is the cost of one
# call, start-up and shutdown cancelling out. Only mcpflow is counted (not the fixture it
# starts, nor the load generator).
#
#   bench/instructions.sh http                  # graph tool over Streamable HTTP, 2025-11-25
#   PROTOCOL=2026-07-28 bench/instructions.sh http
#   bench/instructions.sh gateway               # pass-through over stdio (bench/configs/gateway.yaml)
#   bench/instructions.sh gateway_hook          # the same with one blocking JavaScript pre hook
#   bench/instructions.sh http_gateway          # pass-through over Streamable HTTP (as peers.sh)
#   bench/instructions.sh peer_rs               # the same work through the Rust mcp-proxy 0.6
#                                               # (installed by bench/peers.sh into PEERS_DIR)
#   CLIENTS=16 LOW=200 HIGH=1200 SKIP_BUILD=1 bench/instructions.sh http
#   MCPFLOW=/path/to/other/mcpflow bench/instructions.sh http   # A/B another build
#   CONFIG=bench/configs/telemetry.yaml bench/instructions.sh http   # another graph (tool `add`)
#
# Prints one JSON line. `memcpy` is reported apart: callgrind counts `rep movsb` once per byte,
# so those Ir are roughly bytes copied, not time.
set -euo pipefail
source "$(dirname "$0")/common.sh"

mode=${1:-http}
CLIENTS=${CLIENTS:-16}
LOW=${LOW:-200}
HIGH=${HIGH:-1200}
PROTOCOL=${PROTOCOL:-2025-11-25}
need valgrind "callgrind counts the instructions"
need callgrind_annotate "to read callgrind's totals"
need jq "to read mcpflow-bench's JSON lines"
build_release
MCPFLOW=${MCPFLOW:-$REL/mcpflow}

work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
trap '[[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT

# Total Ir of one callgrind output, and the part spent in memcpy.
totals() { # file
    local total copy
    total=$(sed -n 's/^summary: *//p; s/^totals: *//p' "$1" | head -n 1 | cut -d' ' -f1)
    copy=$(callgrind_annotate --threshold=100 "$1" 2>/dev/null |
        awk '/memcpy|memmove/ { gsub(",", "", $1); s += $1 } END { print s + 0 }')
    echo "$total $copy"
}

run_http() { # calls out [config tool args]
    local log="$work/serve.log" tool=${4:-add} args=${5:-'{"a": 1, "b": 2}'}
    valgrind --tool=callgrind --callgrind-out-file="$2" "$MCPFLOW" serve "${3:-${CONFIG:-bench/configs/http.yaml}}" \
        --http 127.0.0.1:0 2>"$log" &
    local server=$! url
    # Under valgrind the start takes seconds.
    url=$(listen_url "$log" 600)
    "$REL/mcpflow-bench" http --url "$url" --tool "$tool" --args "$args" \
        --protocol "$PROTOCOL" --clients "$CLIENTS" --calls "$1" >/dev/null
    kill -INT "$server"
    wait "$server" || true
}

run_gateway() { # calls out [config]
    local line
    line=$("$REL/mcpflow-bench" concurrent --calls "$1" --concurrency "$CLIENTS" --tool fx__echo \
        --args '{"x": 21}' --label callgrind -- \
        valgrind --tool=callgrind --callgrind-out-file="$2" "$MCPFLOW" serve "${3:-bench/configs/gateway.yaml}")
    [[ $(jq -c .result <<<"$line") == '{"x":21}' ]] || { echo "bench: $line" >&2; exit 1; }
}

# The pass-through as bench/peers.sh drives it: a Streamable HTTP client (2025-11-25 sessions
# unless PROTOCOL says otherwise) → the gateway → the fixture's `echo` over stdio.
run_http_gateway() { # calls out
    run_http "$1" "$2" bench/configs/gateway.yaml fx__echo '{"x": 1}'
}

# The same work through the tower-based Rust mcp-proxy 0.6 (bench/peers.sh installs it), so
# its instructions per call stand beside mcpflow's.
run_peer_rs() { # calls out
    local proxy=${PEERS_DIR:-/work/peers}/cargo/bin/mcp-proxy port server
    [[ -x $proxy ]] || { echo "bench: $proxy is missing (bench/peers.sh installs it)" >&2; exit 1; }
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    printf '%s\n' '[proxy]' 'name = "bench"' 'separator = "/"' '[proxy.listen]' 'host = "127.0.0.1"' \
        "port = $port" '[[backends]]' 'name = "fx"' 'transport = "stdio"' \
        "command = \"$REL/mcpflow-fixture\"" >"$work/proxy.toml"
    RUST_LOG=error valgrind --tool=callgrind --callgrind-out-file="$2" "$proxy" \
        --config "$work/proxy.toml" 2>"$work/proxy.log" &
    server=$!
    for _ in $(seq 600); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.1
    done
    "$REL/mcpflow-bench" http --url "http://127.0.0.1:$port/" --tool fx/echo --args '{"x": 1}' \
        --protocol "$PROTOCOL" --clients "$CLIENTS" --calls "$1" >/dev/null
    kill -INT "$server"
    wait "$server" || true
}

# Callgrind counts every thread of the process, so the sandbox's workers are in the total.
run_gateway_hook() { # calls out
    run_gateway "$1" "$2" bench/configs/gateway_hook.yaml
}

case $mode in
    http | gateway | gateway_hook | http_gateway | peer_rs) ;;
    *) echo "bench: unknown mode '$mode' (http, gateway, gateway_hook, http_gateway or peer_rs)" >&2; exit 2 ;;
esac
"run_$mode" "$LOW" "$work/low.out"
"run_$mode" "$HIGH" "$work/high.out"
read -r low_total low_copy < <(totals "$work/low.out")
read -r high_total high_copy < <(totals "$work/high.out")
calls=$((HIGH - LOW))
jq -cn --arg mode "$mode" --arg protocol "$PROTOCOL" --argjson clients "$CLIENTS" \
    --argjson calls "$calls" --argjson ir "$(( (high_total - low_total) / calls ))" \
    --argjson copy "$(( (high_copy - low_copy) / calls ))" --arg commit "$(git rev-parse --short HEAD)" \
    '{mode: $mode, protocol: (if $mode | test("^(http|peer)") then $protocol else "2025-11-25 stdio" end),
      clients: $clients, calls: $calls, ir_per_call: $ir, memcpy_ir_per_call: $copy,
      rest_ir_per_call: ($ir - $copy), commit: $commit}'
