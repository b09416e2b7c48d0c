//! Traces end to end: `mcpflow serve --http` exports to a real OTLP receiver (OTLP/HTTP with
//! protobuf bodies, and gRPC), decoded with the official OpenTelemetry protobuf definitions
//! (`opentelemetry-proto`). A graph call with two upstream calls must give one trace, the
//! client's, with the expected parent/child spans, and the upstream (the fixture records every
//! message it receives) must have seen the same trace id in `_meta.traceparent`.
mod http_common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::HeaderMap;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// One span as the receiver decoded it.
#[derive(Debug, Clone)]
struct Span {
    trace_id: String,
    span_id: String,
    parent: String,
    name: String,
    kind: i32,
    attributes: HashMap<String, String>,
    service: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: Option<&AnyValue>) -> String {
    match value {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn spans_of(request: ExportTraceServiceRequest) -> Vec<Span> {
    let mut out = Vec::new();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|a| a.key == "service.name")
            .map(|a| text(a.value.as_ref().and_then(|v| v.value.as_ref())))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                out.push(Span {
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    name: span.name,
                    kind: span.kind,
                    attributes: span
                        .attributes
                        .iter()
                        .map(|a| {
                            let v = a.value.as_ref().and_then(|v| v.value.as_ref());
                            (a.key.clone(), text(v))
                        })
                        .collect(),
                    service: service.clone(),
                });
            }
        }
    }
    out
}

/// An OTLP/HTTP receiver: `POST /v1/traces` with a protobuf `ExportTraceServiceRequest`.
async fn http_receiver() -> (SocketAddr, mpsc::UnboundedReceiver<Span>) {
    let (addr, spans, _) = http_receiver_with_headers().await;
    (addr, spans)
}

/// The same, telling also the headers of every export.
async fn http_receiver_with_headers() -> (
    SocketAddr,
    mpsc::UnboundedReceiver<Span>,
    mpsc::UnboundedReceiver<HeaderMap>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (headers_tx, headers_rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let tx = tx.clone();
            let _ = headers_tx.send(headers);
            async move {
                let request =
                    ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf body");
                for span in spans_of(request) {
                    let _ = tx.send(span);
                }
                exported()
            }
        }),
    );
    let addr = serve_on_loopback(app).await;
    (addr, rx, headers_rx)
}

/// What an OTLP/HTTP collector answers an export it took.
fn exported() -> ([(&'static str, &'static str); 1], Vec<u8>) {
    let response = ExportTraceServiceResponse::default().encode_to_vec();
    ([("content-type", "application/x-protobuf")], response)
}

async fn serve_on_loopback(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

struct Collector(
    mpsc::UnboundedSender<Span>,
    mpsc::UnboundedSender<tonic::metadata::MetadataMap>,
);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let _ = self.1.send(request.metadata().clone());
        for span in spans_of(request.into_inner()) {
            let _ = self.0.send(span);
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// An OTLP/gRPC receiver: the collector's `TraceService`.
async fn grpc_receiver() -> (SocketAddr, mpsc::UnboundedReceiver<Span>) {
    let (addr, spans, _) = grpc_receiver_with_metadata().await;
    (addr, spans)
}

/// The same, telling also the metadata of every export.
async fn grpc_receiver_with_metadata() -> (
    SocketAddr,
    mpsc::UnboundedReceiver<Span>,
    mpsc::UnboundedReceiver<tonic::metadata::MetadataMap>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (metadata_tx, metadata_rx) = mpsc::unbounded_channel();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(Collector(tx, metadata_tx)))
            .serve_with_incoming(incoming)
            .await
    });
    (addr, rx, metadata_rx)
}

fn config(dir: &Path, endpoint: &str, protocol: &str, record: &Path) -> std::path::PathBuf {
    let yaml = format!(
        r#"
version: "1.0"
server: {{ name: traced, version: "1.0.0" }}
telemetry:
  serviceName: traced-test
  traces: {{ endpoint: "{endpoint}", protocol: "{protocol}" }}
mcpServers:
  fx: {{ command: "{fixture}", args: ["--record", "{record}"] }}
tools:
  - name: twice
    inputSchema: {{ type: object, properties: {{ a: {{ type: number }} }}, required: [a] }}
    nodes:
      - {{ id: entry, type: entry, next: first }}
      - {{ id: first, type: mcp, server: fx, tool: add, args: {{ a: {{ expr: "entry.a" }}, b: 1 }}, next: second }}
      - {{ id: second, type: mcp, server: fx, tool: add, args: {{ a: {{ expr: "first.sum" }}, b: 1 }}, next: exit }}
      - {{ id: exit, type: exit }}
"#,
        fixture = http_common::fixture().display(),
        record = record.display(),
    );
    http_common::write_config(dir, &yaml)
}

/// A 2026-07-28 `tools/call` with the caller's trace context in the HTTP header.
async fn call_twice(url: &str, traceparent: &str) -> Value {
    let http = reqwest::Client::new();
    let call = ("twice", json!({"a": 40}));
    http_common::stateless_call(
        &http,
        url,
        1,
        call,
        json!({}),
        &[("traceparent", traceparent)],
    )
    .await
}

/// Spans until `enough` holds of them, within 30 s.
async fn collect(
    rx: &mut mpsc::UnboundedReceiver<Span>,
    enough: impl Fn(&[Span]) -> bool,
) -> Vec<Span> {
    let mut spans = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !enough(&spans) {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(span)) => spans.push(span),
            _ => panic!("the receiver got only these spans: {spans:#?}"),
        }
    }
    spans
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one span named `{name}` in {spans:#?}");
    found[0]
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

async fn one_trace_from_client_to_upstream(protocol: &str) {
    let (addr, mut rx) = match protocol {
        "grpc" => grpc_receiver().await,
        _ => http_receiver().await,
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let record = dir.path().join("upstream.jsonl");
    let config = config(dir.path(), &format!("http://{addr}"), protocol, &record);
    // Batches leave every 50 ms instead of every 5 s.
    let server = http_common::start_with_env(&config, &[], &[("OTEL_BSP_SCHEDULE_DELAY", "50")]);

    let answer = call_twice(&server.url, &format!("00-{TRACE}-{CLIENT_SPAN}-01")).await;
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"sum": 42}),
        "{answer}"
    );

    let spans = collect(&mut rx, |s| {
        s.iter().filter(|s| s.name == "tools/call add").count() >= 2
            && s.iter().any(|s| s.name == "tools/call twice")
            && s.iter().any(|s| s.name == "run twice")
            && s.iter().filter(|s| s.name.starts_with("mcp ")).count() >= 2
    })
    .await;
    for span in &spans {
        assert_eq!(
            span.trace_id, TRACE,
            "every span is in the client's trace: {span:#?}"
        );
        assert_eq!(span.service, "traced-test");
    }
    // SPAN_KIND_SERVER = 2, SPAN_KIND_CLIENT = 3.
    let request = one(&spans, "tools/call twice");
    assert_eq!(
        request.parent, CLIENT_SPAN,
        "the request's parent is the client's span"
    );
    assert_eq!(request.kind, 2);
    assert_eq!(request.attributes["mcp.method.name"], "tools/call");
    assert_eq!(request.attributes["gen_ai.tool.name"], "twice");
    assert!(
        !request.attributes.contains_key("mcp.tool.arguments"),
        "no argument unless the config opts in"
    );
    let run = one(&spans, "run twice");
    assert_eq!(run.parent, request.span_id);
    assert_eq!(run.attributes["mcpflow.run.status"], "succeeded");
    let first = one(&spans, "mcp first");
    let second = one(&spans, "mcp second");
    for node in [first, second] {
        assert_eq!(node.parent, run.span_id, "a node is a child of its run");
        assert_eq!(node.attributes["mcpflow.node.type"], "mcp");
        assert_eq!(node.attributes["mcpflow.node.attempts"], "1");
    }
    let calls: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "tools/call add")
        .collect();
    let mut parents: Vec<&str> = calls.iter().map(|c| c.parent.as_str()).collect();
    parents.sort_unstable();
    let mut nodes = vec![first.span_id.as_str(), second.span_id.as_str()];
    nodes.sort_unstable();
    assert_eq!(parents, nodes, "each upstream call is a child of its node");
    for call in &calls {
        assert_eq!(call.kind, 3);
        assert_eq!(call.attributes["mcpflow.upstream"], "fx");
    }

    // The upstream saw the trace: each tools/call it received names its call span as parent.
    let received = std::fs::read_to_string(&record).expect("the fixture recorded");
    let mut seen: Vec<String> = received
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == "tools/call")
        .map(|m| {
            m["params"]["_meta"]["traceparent"]
                .as_str()
                .unwrap_or("none")
                .to_owned()
        })
        .collect();
    seen.sort_unstable();
    let mut expected: Vec<String> = calls
        .iter()
        .map(|c| format!("00-{TRACE}-{}-01", c.span_id))
        .collect();
    expected.sort_unstable();
    assert_eq!(
        seen, expected,
        "the upstream got the trace context of each call"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_over_otlp_http() {
    one_trace_from_client_to_upstream("http/protobuf").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_over_otlp_grpc() {
    one_trace_from_client_to_upstream("grpc").await;
}

/// `_meta.traceparent` (SEP-414) is a parent too, and without any trace context the request
/// starts a trace of its own; `recordArguments` puts the arguments in the request's span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_traceparent_and_recorded_arguments() {
    let (addr, mut rx) = http_receiver().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let record = dir.path().join("upstream.jsonl");
    let path = config(
        dir.path(),
        &format!("http://{addr}"),
        "http/protobuf",
        &record,
    );
    let yaml = std::fs::read_to_string(&path).expect("config").replace(
        "protocol: \"http/protobuf\" }",
        "protocol: \"http/protobuf\", recordArguments: true }",
    );
    std::fs::write(&path, yaml).expect("config");
    let server = http_common::start_with_env(&path, &[], &[("OTEL_BSP_SCHEDULE_DELAY", "50")]);

    let meta = json!({"traceparent": format!("00-{TRACE}-{CLIENT_SPAN}-01")});
    let http = reqwest::Client::new();
    let answer =
        http_common::stateless_call(&http, &server.url, 7, ("twice", json!({"a": 1})), meta, &[])
            .await;
    assert!(answer.get("result").is_some(), "{answer}");
    let spans = collect(&mut rx, |s| s.iter().any(|s| s.name == "tools/call twice")).await;
    let request = one(&spans, "tools/call twice");
    assert_eq!(request.trace_id, TRACE);
    assert_eq!(request.parent, CLIENT_SPAN);
    assert_eq!(request.attributes["mcp.tool.arguments"], r#"{"a":1}"#);

    // No trace context: a new trace, with no parent.
    let own = call_twice(&server.url, "not a traceparent").await;
    assert!(own.get("result").is_some(), "{own}");
    let spans = collect(&mut rx, |s| s.iter().any(|s| s.name == "tools/call twice")).await;
    let request = one(&spans, "tools/call twice");
    assert_ne!(request.trace_id, TRACE);
    assert!(request.parent.is_empty(), "a root span: {request:#?}");
}

/// Without an endpoint in the config, the standard variables name the collector (the base URL
/// gets the traces path over HTTP), `OTEL_EXPORTER_OTLP_HEADERS` adds headers (values
/// percent-decoded) and the config's `headers` (with `${VAR}`) win over them; over gRPC the
/// same headers are the request's metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_names_the_collector_and_its_headers() {
    for protocol in ["http/protobuf", "grpc"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let record = dir.path().join("upstream.jsonl");
        let path = config(dir.path(), "http://unused", protocol, &record);
        let yaml = std::fs::read_to_string(&path).expect("config").replace(
            &format!("traces: {{ endpoint: \"http://unused\", protocol: \"{protocol}\" }}"),
            "traces: { enabled: true, headers: { x-from-config: \"${COLLECTOR_KEY}\" } }",
        );
        assert!(yaml.contains("x-from-config"), "{yaml}");
        std::fs::write(&path, yaml).expect("config");
        let (addr, mut spans, mut headers) = match protocol {
            "grpc" => {
                let (addr, spans, mut metadata) = grpc_receiver_with_metadata().await;
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(async move {
                    while let Some(m) = metadata.recv().await {
                        let _ = tx.send(m.into_headers());
                    }
                });
                (addr, spans, rx)
            }
            _ => http_receiver_with_headers().await,
        };
        let env = [
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-from-env=a%20b%2Cc, x-from-config=overridden",
            ),
            ("COLLECTOR_KEY", "k-123"),
        ];
        let endpoint = format!("http://{addr}");
        let env: Vec<(&str, &str)> = env
            .into_iter()
            .chain([("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())])
            .collect();
        let server = http_common::start_with_env(&path, &[], &env);
        let answer = call_twice(&server.url, &format!("00-{TRACE}-{CLIENT_SPAN}-01")).await;
        assert!(answer.get("result").is_some(), "{answer}");
        let got = collect(&mut spans, |s| {
            s.iter().any(|s| s.name == "tools/call twice")
        })
        .await;
        assert_eq!(one(&got, "tools/call twice").trace_id, TRACE, "{protocol}");
        let sent = tokio::time::timeout(Duration::from_secs(10), headers.recv())
            .await
            .expect("headers in time")
            .expect("headers");
        assert_eq!(sent["x-from-env"], "a b,c", "{protocol}: {sent:?}");
        assert_eq!(sent["x-from-config"], "k-123", "{protocol}: {sent:?}");
    }
}

/// An OTLP/HTTP receiver telling the spans of each export apart; the first `hang` exports are
/// answered only after 60 s (a collector that stalls).
async fn batch_receiver(hang: usize) -> (SocketAddr, mpsc::UnboundedReceiver<Vec<Span>>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let tx = tx.clone();
            let nth = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                let request =
                    ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf body");
                let _ = tx.send(spans_of(request));
                if nth < hang {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                exported()
            }
        }),
    );
    let addr = serve_on_loopback(app).await;
    (addr, rx)
}

/// A server exporting over OTLP/HTTP to a [`batch_receiver`], with `env`.
async fn traced_over_http(
    dir: &Path,
    hang: usize,
    env: &[(&str, &str)],
) -> (http_common::Server, mpsc::UnboundedReceiver<Vec<Span>>) {
    let (addr, exports) = batch_receiver(hang).await;
    let record = dir.join("upstream.jsonl");
    let path = config(dir, &format!("http://{addr}"), "http/protobuf", &record);
    (http_common::start_with_env(&path, &[], env), exports)
}

fn stop(server: &mut http_common::Server) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let _ = server.child.wait();
}

/// Spans leave in requests of `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` as soon as that many have
/// ended (not at the schedule delay, an hour here), and what is left goes at shutdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_leave_in_batches_of_the_export_size_and_the_rest_at_shutdown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, mut exports) = traced_over_http(
        dir.path(),
        0,
        &[
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2"),
            ("OTEL_BSP_SCHEDULE_DELAY", "3600000"),
        ],
    )
    .await;
    let answer = call_twice(&server.url, &format!("00-{TRACE}-{CLIENT_SPAN}-01")).await;
    assert!(answer.get("result").is_some(), "{answer}");
    // Before any delay could pass: full batches of two.
    let mut got = Vec::new();
    while got.len() < 6 {
        let batch = tokio::time::timeout(Duration::from_secs(20), exports.recv())
            .await
            .expect("a full batch without waiting for the schedule delay")
            .expect("receiver open");
        assert_eq!(batch.len(), 2, "{batch:#?}");
        got.extend(batch);
    }
    stop(&mut server);
    while let Ok(Some(batch)) = tokio::time::timeout(Duration::from_secs(5), exports.recv()).await {
        assert!(batch.len() <= 2, "{batch:#?}");
        got.extend(batch);
    }
    // The whole trace arrived: the request's span and both upstream calls among the rest.
    assert_eq!(one(&got, "tools/call twice").trace_id, TRACE);
    let upstream = got.iter().filter(|s| s.name == "tools/call add").count();
    assert_eq!(upstream, 2, "{got:#?}");
    assert!(got.iter().all(|s| s.trace_id == TRACE), "{got:#?}");
}

/// A collector that stalls does not make spans pile up: past `OTEL_BSP_MAX_QUEUE_SIZE` (the
/// spans being sent included) new ones are dropped, and the server still answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_collector_bounds_the_queue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, mut exports) = traced_over_http(
        dir.path(),
        usize::MAX,
        &[
            ("OTEL_BSP_MAX_QUEUE_SIZE", "3"),
            ("OTEL_BSP_SCHEDULE_DELAY", "3600000"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "1000"),
        ],
    )
    .await;
    for _ in 0..3 {
        let answer = call_twice(&server.url, &format!("00-{TRACE}-{CLIENT_SPAN}-01")).await;
        assert!(answer.get("result").is_some(), "{answer}");
    }
    stop(&mut server);
    let mut spans = 0;
    while let Ok(Some(batch)) = tokio::time::timeout(Duration::from_secs(3), exports.recv()).await {
        spans += batch.len();
    }
    // Three calls made about two dozen spans; at most a queue's worth was ever buffered, and
    // each export carried at most that many.
    assert!((1..=3 * 2).contains(&spans), "{spans} spans exported");
}

/// The sampler `OTEL_TRACES_SAMPLER` names decides for the whole call: a call it drops leaves
/// no span, and the upstream still gets the trace, flagged unsampled, so that it drops its part
/// too; with the caller's decision followed (`parentbased_*`), a sampled caller is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sampler_decides_for_the_whole_call_and_the_upstream_is_told() {
    for (sampler, recorded) in [("always_off", false), ("parentbased_always_off", true)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut server, mut exports) = traced_over_http(
            dir.path(),
            0,
            &[
                ("OTEL_BSP_SCHEDULE_DELAY", "50"),
                ("OTEL_TRACES_SAMPLER", sampler),
            ],
        )
        .await;
        let answer = call_twice(&server.url, &format!("00-{TRACE}-{CLIENT_SPAN}-01")).await;
        assert!(answer.get("result").is_some(), "{answer}");
        // Everything ended is sent at shutdown.
        stop(&mut server);
        let mut got = Vec::new();
        while let Ok(Some(batch)) =
            tokio::time::timeout(Duration::from_secs(3), exports.recv()).await
        {
            got.extend(batch);
        }
        let received = std::fs::read_to_string(dir.path().join("upstream.jsonl"))
            .expect("the fixture recorded");
        let sent: Vec<String> = received
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| m["method"] == "tools/call")
            .filter_map(|m| {
                m["params"]["_meta"]["traceparent"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        assert_eq!(sent.len(), 2, "{sampler}: {received}");
        if recorded {
            assert_eq!(
                one(&got, "tools/call twice").parent,
                CLIENT_SPAN,
                "{sampler}"
            );
            assert!(got.len() >= 7, "{sampler}: {got:#?}");
            assert!(
                sent.iter()
                    .all(|tp| tp.starts_with(&format!("00-{TRACE}-")) && tp.ends_with("-01")),
                "{sampler}: {sent:?}"
            );
        } else {
            assert!(got.is_empty(), "{sampler}: nothing is exported: {got:#?}");
            assert!(
                sent.iter()
                    .all(|tp| tp.starts_with(&format!("00-{TRACE}-")) && tp.ends_with("-00")),
                "{sampler}: {sent:?}"
            );
        }
    }
}
