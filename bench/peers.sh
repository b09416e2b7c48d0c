#!/usr/bin/env bash
# mcpflow side by side with the gateways a user would otherwise pick, in one go and interleaved:
# each one fronts the same upstream (mcpflow-fixture over stdio) over Streamable HTTP
# (2025-11-25 sessions) and is driven by the same load generator (`mcpflow-bench http`, the
# fixture's `echo`). Rounds alternate the gateways, so drift on the shared cores hits each alike.
# For each: calls/s, p50/p99 and the gateway's own CPU per call (its process from /proc, not its
# upstream child), with the ratio to mcpflow's: the figure that repeats on these shared cores.
#
#   gateway        how it runs
#   mcpflow        mcpflow serve bench/configs/gateway.yaml --http   (tool fx__echo)
#   supergateway   npm supergateway --stdio mcpflow-fixture --outputTransport streamableHttp --stateful
#                  (its default spawns a child per request)
#   mcp-proxy.py   PyPI mcp-proxy (sparfenyuk) --port P mcpflow-fixture
#   mcp-proxy.rs   crates.io mcp-proxy 0.6 (tower-based), one stdio backend (tool fx/echo)
#
# The peers are installed once into PEERS_DIR (default /work/peers, outside the repo): pip
# --target, npm --prefix, cargo install --root (its own target dir: a cold build of some minutes).
#
#   bench/peers.sh                              # 3 rounds, 16 clients then 1, 8 s each
#   ROUNDS=5 CLIENTS=1,16 SECONDS_PER_RUN=5 SKIP_BUILD=1 bench/peers.sh
#   GATEWAYS="mcpflow mcp-proxy.rs" bench/peers.sh
#
# With two cores or more the gateway runs on core 0 and the load generator on the others
# (PIN=0: share every core). A measurement, not a test.
set -euo pipefail
source "$(dirname "$0")/common.sh"
need jq "to read mcpflow-bench's JSON lines"
need python3 "the PyPI mcp-proxy"
need npm "supergateway"
need node "supergateway"
build_release
machine_line

PEERS=${PEERS_DIR:-/work/peers}
rounds=${ROUNDS:-3}
secs=${SECONDS_PER_RUN:-8}
clients=${CLIENTS:-16,1}
gateways=${GATEWAYS:-mcpflow supergateway mcp-proxy.py mcp-proxy.rs}
SUPERGATEWAY_VERSION=${SUPERGATEWAY_VERSION:-4.0.0}
MCP_PROXY_PY_VERSION=${MCP_PROXY_PY_VERSION:-0.13.0}
MCP_PROXY_RS_VERSION=${MCP_PROXY_RS_VERSION:-0.6.0}

install_peers() {
    mkdir -p "$PEERS"
    if [[ $gateways == *mcp-proxy.py* && ! -d $PEERS/py/mcp_proxy ]]; then
        echo "# installing mcp-proxy $MCP_PROXY_PY_VERSION (PyPI) into $PEERS/py" >&2
        python3 -m pip install --quiet --target "$PEERS/py" "mcp-proxy==$MCP_PROXY_PY_VERSION" >&2
    fi
    if [[ $gateways == *supergateway* && ! -f $PEERS/npm/node_modules/supergateway/package.json ]]; then
        echo "# installing supergateway $SUPERGATEWAY_VERSION (npm) into $PEERS/npm" >&2
        npm install --silent --prefix "$PEERS/npm" "supergateway@$SUPERGATEWAY_VERSION" >&2
    fi
    if [[ $gateways == *mcp-proxy.rs* && ! -x $PEERS/cargo/bin/mcp-proxy ]]; then
        echo "# installing mcp-proxy $MCP_PROXY_RS_VERSION (crates.io) into $PEERS/cargo" >&2
        CARGO_TARGET_DIR="$PEERS/target" cargo install mcp-proxy --version "$MCP_PROXY_RS_VERSION" \
            --locked --no-default-features --root "$PEERS/cargo" >&2
    fi
}
install_peers

work=$(mktemp -d)
gateway_pid=
trap '[[ -n $gateway_pid ]] && kill $gateway_pid 2>/dev/null; rm -rf "$work"' EXIT

on_server=() on_load=()
if [[ ${PIN:-$(($(nproc) > 1))} == 1 ]] && command -v taskset >/dev/null; then
    on_server=(taskset -c 0) on_load=(taskset -c "1-$(($(nproc) - 1))")
    echo "# gateways on core 0, the load generator on the others" >&2
fi

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until something accepts on 127.0.0.1:$1 (up to 30 s): the peers print no address.
wait_port() {
    for _ in $(seq 300); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        kill -0 "$gateway_pid" 2>/dev/null || break
        sleep 0.1
    done
    cat "$work/gateway.log" >&2
    echo "bench: the gateway on port $1 did not start" >&2
    exit 1
}

fixture=$(command -v mcpflow-fixture)
# Starts gateway $1 in the background; sets gateway_pid, url and tool.
start() {
    local port log=$work/gateway.log
    port=$(free_port)
    case $1 in
        mcpflow)
            "${on_server[@]}" "$REL/mcpflow" serve bench/configs/gateway.yaml --http 127.0.0.1:0 2>"$log" &
            gateway_pid=$!
            url=$(listen_url "$log" 300)
            tool=fx__echo ;;
        supergateway)
            "${on_server[@]}" node "$PEERS/npm/node_modules/supergateway/dist/index.js" --stdio "$fixture" \
                --outputTransport streamableHttp --stateful --port "$port" --logLevel none >"$log" 2>&1 &
            gateway_pid=$!
            url=http://127.0.0.1:$port/mcp tool=echo ;;
        mcp-proxy.py)
            PYTHONPATH=$PEERS/py "${on_server[@]}" python3 -m mcp_proxy --host 127.0.0.1 --port "$port" \
                --log-level WARNING "$fixture" >"$log" 2>&1 &
            gateway_pid=$!
            url=http://127.0.0.1:$port/mcp tool=echo ;;
        mcp-proxy.rs)
            cat >"$work/proxy.toml" <<EOF
[proxy]
name = "bench"
separator = "/"
[proxy.listen]
host = "127.0.0.1"
port = $port
[[backends]]
name = "fx"
transport = "stdio"
command = "$fixture"
EOF
            RUST_LOG=error "${on_server[@]}" "$PEERS/cargo/bin/mcp-proxy" --config "$work/proxy.toml" >"$log" 2>&1 &
            gateway_pid=$!
            url=http://127.0.0.1:$port/ tool=fx/echo ;;
        *) echo "bench: unknown gateway $1" >&2; exit 1 ;;
    esac
    [[ $1 == mcpflow ]] || wait_port "$port"
}

results=$work/results.jsonl
for round in $(seq "$rounds"); do
    for gateway in $gateways; do
        start "$gateway"
        line=$("${on_load[@]}" "$REL/mcpflow-bench" http --url "$url" --tool "$tool" --args '{"x": 1}' \
            --protocol 2025-11-25 --clients "$clients" --seconds "$secs" --server-pid "$gateway_pid") || {
            cat "$work/gateway.log" >&2
            echo "bench: $gateway failed under load" >&2
            exit 1
        }
        kill -INT "$gateway_pid" 2>/dev/null || true
        wait "$gateway_pid" 2>/dev/null || true
        gateway_pid=
        jq -c --arg gateway "$gateway" --argjson round "$round" '. + {gateway: $gateway, round: $round}' \
            <<<"$line" | tee -a "$results" >&2
    done
done

echo "| gateway | clients | calls/s | p50 µs | p99 µs | gateway CPU µs/call | CPU vs mcpflow |"
echo "|---|---|---|---|---|---|---|"
jq -rs '
  def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  group_by([.gateway, .clients]) | map({gateway: .[0].gateway, clients: .[0].clients,
      cps: (map(.calls_per_s) | median), p50: (map(.p50_us) | median), p99: (map(.p99_us) | median),
      cpu: (map(.server_cpu_us) | median)})
  | (map(select(.gateway == "mcpflow")) | map({key: (.clients | tostring), value: .cpu}) | from_entries) as $ours
  | sort_by(.clients, .cpu) | .[]
  | "| \(.gateway) | \(.clients) | \(.cps | round) | \(.p50 | round) | \(.p99 | round) | \(.cpu * 10 | round / 10) | \(if $ours[.clients | tostring] then (.cpu / $ours[.clients | tostring] * 100 | round / 100 | tostring) + "×" else "–" end) |"' "$results"
# Round by round, each peer's CPU per call over mcpflow's in the same round and client count.
jq -rs '
  def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  (map(select(.gateway == "mcpflow")) | map({key: "\(.round)/\(.clients)", value: .server_cpu_us}) | from_entries) as $ours
  | map(select(.gateway != "mcpflow")) | group_by([.gateway, .clients]) | .[]
  | map(.server_cpu_us / $ours["\(.round)/\(.clients)"]) as $ratios
  | "# \(.[0].gateway) / mcpflow at \(.[0].clients) clients, round by round: \($ratios | map(. * 100 | round / 100) | join(" ")); median \($ratios | median * 100 | round / 100)×"' "$results"
