//! The 2026-07-28 era through the gateway: `mcpflow serve --http` in pure pass-through in
//! front of the fixture server (stdio, `naming: none`, no graph tools) passes every server
//! scenario of the 2026-07-28 requirement set, as the fixture itself does
//! (crates/fixture/tests/conformance.rs). That needs the client's per-request `_meta`
//! (protocol version, capabilities, log level) to reach the upstream, "input required"
//! results to come back unchanged and the retries (`inputResponses`, `requestState`) to go up
//! as they came, upstream refusals (-32021 and its `data`) to come back whole, and the
//! gateway's own `server/discover` and `subscriptions/listen` to match what it declares.
mod conformance_suite;
mod http_common;

use http_common::{fixture, start, write_config};

#[test]
fn every_required_2026_07_28_server_scenario_passes_through_the_gateway() {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = format!(
        r#"
version: "1.0"
server: {{name: "mcpflow-gateway-2026", version: "1.0.0"}}
mcpServers:
  fixture:
    command: "{}"
proxy:
  upstreams:
    fixture:
      naming: none
tools: []
"#,
        fixture().display()
    );
    let gateway = start(&write_config(dir.path(), &yaml), &[]);
    conformance_suite::run(
        &gateway.url,
        &conformance_suite::required_server_scenarios(),
    );
}
