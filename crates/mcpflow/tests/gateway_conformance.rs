//! The gateway is transparent: `mcpflow serve --http` proxying the fixture server
//! (`gateway_conformance.yaml`, stdio upstream, `naming: none`) passes the official MCP
//! conformance suite's server scenarios as the fixture itself does (crates/fixture/tests), and
//! the requests the fixture sends back while serving a call (sampling, elicitation) reach the
//! client that made the call — and only that client — through real rmcp clients.
mod conformance_suite;
mod http_common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conformance_suite::conformance;
use http_common::{Server, config, fixture, start_with_env};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    Implementation, ProtocolVersion, SamplingCapability,
};
#[expect(deprecated, reason = "sampling is deprecated in 2026-07-28 only")]
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};
use rmcp::service::{PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// `mcpflow serve gateway_conformance.yaml --http 127.0.0.1:0`, the fixture as its upstream.
fn start_gateway() -> Server {
    let fixture = fixture();
    let fixture = fixture.to_str().expect("utf-8 path");
    start_with_env(
        &config("gateway_conformance.yaml"),
        &[],
        &[("MCPFLOW_FIXTURE", fixture)],
    )
}

/// The `  - name [versions]` entries of the "Server scenarios" section of `conformance list`.
fn server_scenarios(listing: &str) -> Vec<String> {
    let mut in_server = false;
    let mut names = Vec::new();
    for line in listing.lines() {
        if !line.starts_with(' ') && !line.trim().is_empty() {
            in_server = line.trim().starts_with("Server scenarios");
            continue;
        }
        if let Some(entry) = line.trim().strip_prefix("- ")
            && in_server
            && let Some(name) = entry.split_whitespace().next()
        {
            names.push(name.to_owned());
        }
    }
    names
}

#[test]
fn every_server_scenario_of_release_0_1_16_passes_through_the_gateway() {
    let scenarios = server_scenarios(&conformance(&["list", "--server"]));
    assert_eq!(
        scenarios.len(),
        32,
        "0.1.16 server scenarios: {scenarios:?}"
    );
    let gateway = start_gateway();
    let mut args = vec!["-s", "server", gateway.url.as_str()];
    args.extend(scenarios.iter().map(String::as_str));
    conformance(&args);
}

/// A client that answers sampling and elicitation (when it declares them) and counts what it
/// was asked. With `hold`, it never answers an elicitation and records its cancellation.
#[derive(Clone, Default)]
struct Asker {
    declares: bool,
    hold: bool,
    asked: Arc<AtomicUsize>,
    cancelled: Arc<AtomicUsize>,
    prompts: Arc<Mutex<Vec<Value>>>,
}

#[expect(deprecated, reason = "sampling is deprecated in 2026-07-28 only")]
impl ClientHandler for Asker {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.declares {
            capabilities.sampling = Some(SamplingCapability::default());
            capabilities.elicitation = Some(ElicitationCapability::default());
        }
        ClientConfig::new(capabilities, Implementation::new("relay-tests", "0.0.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let messages = serde_json::to_value(&params.messages).unwrap_or_default();
        if let Ok(mut prompts) = self.prompts.lock() {
            prompts.push(messages);
        }
        serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": "a sampled answer"},
            "model": "test-model",
            "stopReason": "endTurn"
        }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn create_elicitation(
        &self,
        _params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if self.hold {
            context.ct.cancelled().await;
            self.cancelled.fetch_add(1, Ordering::SeqCst);
            return Err(ErrorData::internal_error("cancelled", None));
        }
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({"response": "from the client"})))
    }
}

type HttpClient = RunningService<RoleClient, Asker>;

async fn client(url: &str, asker: Asker) -> HttpClient {
    asker
        .serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
        .await
        .expect("initialize over HTTP")
}

async fn call(client: &HttpClient, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool}: {e}"))
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_and_elicitation_round_trip_to_the_calling_client() {
    let gateway = start_gateway();
    let asker = Asker {
        declares: true,
        ..Asker::default()
    };
    let a = client(&gateway.url, asker.clone()).await;
    let r = call(&a, "test_sampling", json!({"prompt": "what is 2+2?"})).await;
    assert_eq!(text(&r), "LLM response: a sampled answer", "{r:?}");
    assert_ne!(r.is_error, Some(true));
    let prompts = asker.prompts.lock().map(|p| p.clone()).unwrap_or_default();
    assert_eq!(
        prompts,
        [json!([{"role": "user", "content": {"type": "text", "text": "what is 2+2?"}}])]
    );
    let r = call(&a, "test_elicitation", json!({"message": "Your name?"})).await;
    assert_eq!(
        text(&r),
        r#"User response: action=accept, content={"response":"from the client"}"#
    );
    assert_eq!(asker.asked.load(Ordering::SeqCst), 2);

    // A client that declared neither is not asked: the upstream hears why at once.
    let plain = Asker::default();
    let b = client(&gateway.url, plain.clone()).await;
    let r = call(&b, "test_sampling", json!({"prompt": "hello"})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(
        text(&r).contains("did not declare the `sampling` capability"),
        "{}",
        text(&r)
    );
    let r = call(&b, "test_elicitation", json!({"message": "?"})).await;
    assert!(
        text(&r).contains("did not declare the `elicitation` capability"),
        "{}",
        text(&r)
    );
    assert_eq!(plain.asked.load(Ordering::SeqCst), 0);
    a.cancel().await.expect("closes");
    b.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_two_clients_in_flight_on_the_upstream_nobody_is_asked() {
    let gateway = start_gateway();
    let (first, second) = (
        Asker {
            declares: true,
            ..Asker::default()
        },
        Asker {
            declares: true,
            ..Asker::default()
        },
    );
    let a = client(&gateway.url, first.clone()).await;
    let b = client(&gateway.url, second.clone()).await;
    // The first client's call stays in flight on the one fixture process.
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("track").with_arguments(
            json!({"key": "held", "ms": 60_000})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ),
    ));
    let held = a
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    let mut in_flight = Value::Null;
    for _ in 0..500 {
        in_flight = call(&b, "track_stats", json!({"key": "held"}))
            .await
            .structured_content
            .unwrap_or_default();
        if in_flight["in_flight"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(in_flight["in_flight"], 1, "{in_flight}");

    // Over stdio the fixture's request names no call: it could be either client's.
    let r = call(&b, "test_sampling", json!({"prompt": "secret of b"})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(text(&r).contains("more than one client"), "{}", text(&r));
    assert_eq!(
        first.asked.load(Ordering::SeqCst),
        0,
        "leaked to the other client"
    );
    assert_eq!(second.asked.load(Ordering::SeqCst), 0);

    // Once the first client's call is gone, the second one is asked again.
    held.cancel(Some("test".into())).await.expect("cancel sent");
    let mut answer = String::new();
    for _ in 0..500 {
        answer = text(&call(&b, "test_sampling", json!({"prompt": "again"})).await);
        if answer == "LLM response: a sampled answer" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(answer, "LLM response: a sampled answer");
    assert_eq!(first.asked.load(Ordering::SeqCst), 0);
    a.cancel().await.expect("closes");
    b.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_the_call_cancels_the_relayed_request_at_the_client() {
    let gateway = start_gateway();
    let asker = Asker {
        declares: true,
        hold: true,
        ..Asker::default()
    };
    let a = client(&gateway.url, asker.clone()).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("test_elicitation").with_arguments(
            json!({"message": "never answered"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ),
    ));
    let handle = a
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    eventually("the client is asked", || {
        asker.asked.load(Ordering::SeqCst) == 1
    })
    .await;
    handle
        .cancel(Some("test".into()))
        .await
        .expect("cancel sent");
    eventually("the relayed elicitation is cancelled at the client", || {
        asker.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
    a.cancel().await.expect("closes");
}
