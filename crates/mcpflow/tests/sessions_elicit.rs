//! `mode: auto` await nodes: a client that declared elicitation is asked inline (the call
//! answers the result at once); one that did not gets a session to continue.

mod common;
mod sessions_support;

use std::process::Stdio;

use common::connect;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use sessions_support::*;

const CONFIG: &str = r#"
version: "1.0"
server: {name: ask, version: "1.0.0"}
tools:
  - name: approve
    inputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}
    nodes:
      - {id: start, type: entry, next: ask}
      - id: ask
        type: await
        mode: auto
        message: {expr: "'Approve order ' & $string($.start.n) & '?'"}
        inputSchema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
        next: done
      - {id: done, type: transform, transform: {expr: "{'n': $.start.n, 'ok': $.ask.ok}"}, next: finish}
      - {id: finish, type: exit}
"#;

/// Accepts every elicitation with `{ok: true}`, after checking what it was asked.
struct Approver;

impl ClientHandler for Approver {
    fn get_info(&self) -> ClientConfig {
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("capabilities");
        ClientConfig::new(caps, Implementation::new("approver", "0.0.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request).unwrap_or(Value::Null);
        let ok = asked["message"] == "Approve order 7?"
            && asked["requestedSchema"]["properties"]["ok"]["type"] == "boolean";
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"ok": ok})))
    }
}

#[tokio::test]
async fn auto_mode_elicits_when_the_client_can_and_waits_otherwise() {
    let store = TestStore::sqlite();
    let config = store.config(CONFIG);
    let mut cmd = tokio::process::Command::new(common::mcpflow());
    cmd.arg("serve").arg(&config).args(["--store", &store.url]);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("mcpflow starts");
    let client = Approver
        .serve(transport)
        .await
        .expect("initialize succeeds");
    let Value::Object(args) = json!({"n": 7}) else {
        unreachable!("a literal object")
    };
    let answer = client
        .call_tool(rmcp::model::CallToolRequestParams::new("approve").with_arguments(args))
        .await
        .expect("tools/call");
    let result = structured(&answer);
    assert_eq!(
        result,
        json!({"n": 7, "ok": true}),
        "asked inline, answered at once"
    );
    client.cancel().await.ok();

    let config_arg = config.to_string_lossy().into_owned();
    let plain = connect(&["serve", &config_arg, "--store", &store.url], None).await;
    let w = start(&plain, "approve", json!({"n": 8})).await;
    assert_eq!(w["message"], "Approve order 8?");
    let id = w["sessionId"].as_str().expect("id").to_owned();
    let done = structured(&cont(&plain, "approve", &id, json!({"ok": false})).await);
    assert_eq!(done, json!({"n": 8, "ok": false}));
    plain.cancel().await.ok();
}
