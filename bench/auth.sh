#!/usr/bin/env bash
# What access control costs per call: the trivial graph tool of bench/configs/http.yaml over
# Streamable HTTP (2026-07-28, stateless: every request is authenticated afresh), at 1 and 16
# clients, served three ways: no `auth:`, an API key (a salted SHA-256 compared in constant
# time), and an RS256 JWT checked against a static public key. Each line gives the server's CPU
# time per call; compare those side by side (calls/s moves with the machine's other load).
#
#   bench/auth.sh                     # 5 s per run
#   SECONDS_PER_RUN=10 bench/auth.sh
#   SKIP_BUILD=1 bench/auth.sh        # reuse the bench binaries in $CARGO_TARGET_DIR/profiling
#   INSTRUCTIONS=1 SKIP_BUILD=1 bench/auth.sh   # also callgrind's Ir per call of each mode
#                                               # (bench/instructions.sh: repeatable under load)
#
# A measurement, not a test: it checks only that every call answers a result. Needs openssl
# (the JWT's key and signature).
set -euo pipefail
source "$(dirname "$0")/common.sh"
need openssl "to make the JWT's key and sign it"
[[ ${INSTRUCTIONS:-0} != 1 ]] || need jq "to label bench/instructions.sh's JSON lines"
build_release
machine_line

work=$(mktemp -d)
server=
trap 'if [[ -n $server ]]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$work"' EXIT

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

# The API key: minted as a user would, its entry pasted under auth.keys.
minted=$("$REL/mcpflow" keys new --name bench --scope tools:list --scope tools:call)
key=$(head -n 1 <<<"$minted")
entry=$(sed -n '/^  - name:/,$p' <<<"$minted")

# The JWT: an RSA key made here, the token signed with it (RS256), valid for an hour.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/key.pem" 2>/dev/null
openssl pkey -in "$work/key.pem" -pubout -out "$work/public.pem"
header=$(printf '{"alg":"RS256","typ":"JWT"}' | b64url)
claims=$(printf '{"iss":"https://issuer.bench","aud":"mcpflow-bench","sub":"bench","scope":"tools:list tools:call","exp":%d}' \
    "$(($(date +%s) + 3600))" | b64url)
signature=$(printf '%s.%s' "$header" "$claims" | openssl dgst -sha256 -sign "$work/key.pem" | b64url)
token="$header.$claims.$signature"

cp bench/configs/http.yaml "$work/none.yaml"
{ cat bench/configs/http.yaml; printf 'auth:\n  keys:\n%s\n' "$entry"; } >"$work/key.yaml"
{
    cat bench/configs/http.yaml
    printf 'auth:\n  jwt:\n    issuer: https://issuer.bench\n    audience: mcpflow-bench\n    publicKey: |\n'
    sed 's/^/      /' "$work/public.pem"
} >"$work/jwt.yaml"

secs=${SECONDS_PER_RUN:-5}
for mode in none key jwt; do
    case $mode in
        none) bearer= ;;
        key) bearer=$key ;;
        jwt) bearer=$token ;;
    esac
    log="$work/$mode.log"
    "$REL/mcpflow" serve "$work/$mode.yaml" --http 127.0.0.1:0 2>"$log" &
    server=$!
    url=$(listen_url "$log" 100)
    echo "# auth: $mode"
    if [[ -n $bearer ]]; then export MCPFLOW_BENCH_BEARER=$bearer; else unset MCPFLOW_BENCH_BEARER; fi
    "$REL/mcpflow-bench" http --url "$url" --tool add \
        --args '{"a": 1, "b": 2}' --protocol 2026-07-28 --clients 1,16 --seconds "$secs" \
        --server-pid "$server"
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=
done

# Instructions per call, mode by mode: what the CPU figures above say, in a unit the machine's
# other load does not move.
if [[ ${INSTRUCTIONS:-0} == 1 ]]; then
    for mode in none key jwt; do
        case $mode in
            none) unset MCPFLOW_BENCH_BEARER ;;
            key) export MCPFLOW_BENCH_BEARER=$key ;;
            jwt) export MCPFLOW_BENCH_BEARER=$token ;;
        esac
        CONFIG="$work/$mode.yaml" PROTOCOL=2026-07-28 SKIP_BUILD=1 bash bench/instructions.sh http |
            jq -c --arg mode "$mode" '. + {auth: $mode}'
    done
fi
