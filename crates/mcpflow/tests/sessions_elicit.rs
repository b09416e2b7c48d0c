//! `mode: auto` await nodes: a client that declared elicitation is asked inline (the call
//! answers the result at once); one that did not gets a session to continue. In the
//! 2026-07-28 era the question comes back as an "input required" result instead.

mod common;
mod http_common;
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

/// A `tools/call` of the 2026-07-28 era (no `initialize`, everything in `_meta`), as raw
/// JSON-RPC over HTTP; returns the JSON-RPC `result`.
async fn stateless_call(http: &reqwest::Client, url: &str, id: u64, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-test", "version": "0.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "approve")
        .body(body.to_string())
        .send()
        .await
        .expect("tools/call sent");
    let text = response.text().await.expect("response body");
    let message = http_common::message(&text);
    assert!(message.get("error").is_none(), "JSON-RPC error: {text}");
    message["result"].clone()
}

#[tokio::test]
async fn stateless_clients_are_asked_through_an_input_required_result() {
    let store = TestStore::sqlite();
    let config = store.config(CONFIG);
    let server = http_common::start(&config, &["--store", &store.url]);
    let http = reqwest::Client::new();
    let url = server.url.as_str();

    let asked = stateless_call(
        &http,
        url,
        1,
        json!({"name": "approve", "arguments": {"n": 7}}),
    )
    .await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let request = &asked["inputRequests"]["input"];
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert_eq!(request["params"]["message"], "Approve order 7?", "{asked}");
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["ok"]["type"], "boolean",
        "{asked}"
    );
    let state = asked["requestState"]
        .as_str()
        .expect("a requestState to echo")
        .to_owned();

    // An answer that fails the inputSchema: a clear error, and the session still waits.
    let rejected = stateless_call(
        &http,
        url,
        2,
        json!({"name": "approve", "arguments": {"n": 7}, "requestState": state,
               "inputResponses": {"input": {"action": "accept", "content": {"ok": "yes"}}}}),
    )
    .await;
    assert_eq!(rejected["isError"], true, "{rejected}");
    let why = rejected["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        why.contains("inputSchema") && why.contains("ok"),
        "the error says what is wrong: {rejected}"
    );

    // Retried with nothing answered: asked again, for the same session.
    let again = stateless_call(
        &http,
        url,
        3,
        json!({"name": "approve", "arguments": {"n": 7}, "requestState": state}),
    )
    .await;
    assert_eq!(again["resultType"], "input_required", "{again}");
    assert_eq!(again["requestState"], state.as_str(), "{again}");

    let done = stateless_call(
        &http,
        url,
        4,
        json!({"name": "approve", "arguments": {"n": 7}, "requestState": state,
               "inputResponses": {"input": {"action": "accept", "content": {"ok": true}}}}),
    )
    .await;
    assert_eq!(
        done["structuredContent"],
        json!({"n": 7, "ok": true}),
        "{done}"
    );

    // The session is finished: the same requestState cannot continue it twice.
    let replay = stateless_call(
        &http,
        url,
        5,
        json!({"name": "approve", "arguments": {"n": 7}, "requestState": state,
               "inputResponses": {"input": {"action": "accept", "content": {"ok": true}}}}),
    )
    .await;
    assert_eq!(replay["isError"], true, "{replay}");
}
