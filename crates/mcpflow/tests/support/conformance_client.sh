#!/bin/sh
# The MCP conformance suite's client command for mcpflow's upstream client (scripts/conformance
# client ...): the suite appends its test server's URL as the last argument and names the
# scenario in MCP_CONFORMANCE_SCENARIO. Each scenario is one or two `mcpflow upstream` commands.
set -eu
for url; do :; done
mcpflow="${MCPFLOW_BIN:-mcpflow}"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  tools_call) exec "$mcpflow" upstream call "$url" add_numbers --args '{"a": 5, "b": 3}' ;;
  sse-retry) exec "$mcpflow" upstream call "$url" test_reconnection ;;
  http-invalid-tool-headers) exec "$mcpflow" upstream call "$url" valid_tool ;;
  json-schema-2020-12-preservation)
    # Echo the schema we listed back to the server, which checks nothing was lost on the way.
    # (node is the suite's own, first on PATH.)
    args="$("$mcpflow" upstream list "$url" | node -e '
      let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
        const tool = JSON.parse(s).tools.find(t => t.name === "json_schema_2020_12_tool");
        process.stdout.write(JSON.stringify({ schema: tool.inputSchema }));
      });')"
    exec "$mcpflow" upstream call "$url" json_schema_echo --args "$args" ;;
  *) exec "$mcpflow" upstream list "$url" ;;
esac
