//! Spans as the sink receives them: parents found through the span current while work is
//! polled, a caller's trace context continued, sampling decided once per trace and carried
//! upstream, a span ended once (by `end`, or when its work is dropped).

use std::sync::{Arc, Mutex, OnceLock};

use mcpflow_telemetry::trace::{self, Finished, KeyValue, Pipeline, Sampler, Sink, Span, SpanKind};
use opentelemetry::Value;
use opentelemetry::trace::{SpanId, Status, TraceId};

#[derive(Debug, Clone)]
struct Seen {
    trace_id: TraceId,
    span_id: SpanId,
    parent: SpanId,
    parent_is_remote: bool,
    sampled: bool,
    trace_state: String,
    name: String,
    kind: SpanKind,
    attributes: Vec<KeyValue>,
    status: Status,
    lasted: bool,
}

#[derive(Default)]
struct Collect(Mutex<Vec<Seen>>);

impl Sink for Collect {
    fn on_end(&self, span: &Finished<'_>) {
        self.0.lock().expect("lock").push(Seen {
            trace_id: span.trace_id,
            span_id: span.span_id,
            parent: span.parent_span_id,
            parent_is_remote: span.parent_is_remote,
            sampled: span.flags.is_sampled(),
            trace_state: span.trace_state.to_owned(),
            name: span.name.to_owned(),
            kind: span.kind.clone(),
            attributes: span.attributes.to_vec(),
            status: span.status.clone(),
            lasted: span.end >= span.start,
        });
    }
}

/// The process's pipeline (one per test binary): parent-based, half of new traces sampled.
fn sink() -> &'static Collect {
    static SINK: OnceLock<Arc<Collect>> = OnceLock::new();
    SINK.get_or_init(|| {
        let sink = Arc::new(Collect::default());
        trace::install(Pipeline {
            sampler: Sampler::parent_based_ratio(0.5),
            sink: sink.clone(),
            record_arguments: false,
        });
        sink
    })
}

fn of_trace(trace_id: TraceId) -> Vec<Seen> {
    let seen = sink().0.lock().expect("lock");
    seen.iter()
        .filter(|s| s.trace_id == trace_id)
        .cloned()
        .collect()
}

fn ids(span: &Span) -> (TraceId, SpanId) {
    span.ids().expect("spans are on")
}

/// A remote caller's sampled span, and the trace state it sent.
const CALLER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

#[tokio::test]
async fn children_find_their_parent_while_its_work_is_polled() {
    sink();
    let parent = trace::remote_parent(CALLER, Some("vendor=v1"));
    let request = trace::mcp_request(
        SpanKind::Server,
        "tools/call",
        Some("add"),
        [KeyValue::new("jsonrpc.request.id", "7")],
        Some(&parent),
    );
    let (trace_id, request_id) = ids(&request);
    assert_eq!(trace_id.to_string(), "0af7651916cd43dd8448eb211c80319c");
    let carried = request
        .around(async {
            let run = Span::start("run add", SpanKind::Internal, Vec::new());
            let carried = run
                .around(async {
                    tokio::task::yield_now().await;
                    trace::carry().expect("a current span is carried")
                })
                .await;
            run.set("mcpflow.run.status", "failed");
            run.fail("upstream");
            run.end();
            // Ended once: a second end and the drop add nothing.
            run.end();
            carried
        })
        .await;
    request.end();
    drop(request);
    // Nothing is current once the work is done.
    assert!(trace::carry().is_none());

    let seen = of_trace(trace_id);
    assert_eq!(seen.len(), 2, "{seen:#?}");
    let run = seen
        .iter()
        .find(|s| s.name == "run add")
        .expect("the run's span");
    let served = seen
        .iter()
        .find(|s| s.name == "tools/call add")
        .expect("the request's");
    assert_eq!(served.span_id, request_id);
    assert_eq!(served.parent.to_string(), "b7ad6b7169203331");
    assert!(served.parent_is_remote && served.sampled && served.lasted);
    assert_eq!(served.kind, SpanKind::Server);
    assert_eq!(served.trace_state, "vendor=v1");
    let attribute = |s: &Seen, key: &str| {
        s.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.clone())
    };
    assert_eq!(
        attribute(served, "gen_ai.tool.name"),
        Some(Value::from("add"))
    );
    assert_eq!(run.parent, request_id);
    assert!(!run.parent_is_remote);
    assert_eq!(run.trace_state, "vendor=v1");
    assert_eq!(
        attribute(run, "mcpflow.run.status"),
        Some(Value::from("failed"))
    );
    assert_eq!(attribute(run, "error.type"), Some(Value::from("upstream")));
    assert_eq!(run.status, Status::error(""));
    // What went upstream named the run's span, sampled, with the caller's state.
    assert_eq!(
        carried.traceparent,
        format!("00-{trace_id}-{}-01", run.span_id)
    );
    assert_eq!(carried.tracestate.as_deref(), Some("vendor=v1"));
}

#[tokio::test]
async fn a_span_whose_work_is_dropped_still_ends() {
    sink();
    let parent = trace::remote_parent(CALLER.replace("0af7", "1af7").as_str(), None);
    let request = Span::start_in(&parent, "tools/call slow", SpanKind::Server, Vec::new());
    let (trace_id, _) = ids(&request);
    let work = request.around(std::future::pending::<()>());
    drop(request);
    assert!(of_trace(trace_id).is_empty(), "still running");
    drop(work);
    let seen = of_trace(trace_id);
    assert_eq!(seen.len(), 1);
    assert!(seen[0].trace_state.is_empty());
}

#[tokio::test]
async fn an_unsampled_caller_is_followed_and_its_decision_carried_upstream() {
    sink();
    let unsampled = CALLER.replace("0af7", "2af7").replace("-01", "-00");
    let parent = trace::remote_parent(&unsampled, None);
    let request = Span::start_in(&parent, "tools/call", SpanKind::Server, Vec::new());
    let (trace_id, request_id) = ids(&request);
    let carried = request
        .around(async { trace::carry().expect("carried even when not sampled") })
        .await;
    request.set("ignored", true);
    request.end();
    assert_eq!(
        carried.traceparent,
        format!("00-{trace_id}-{request_id}-00")
    );
    assert!(
        of_trace(trace_id).is_empty(),
        "an unsampled span is not exported"
    );
}

#[tokio::test]
async fn new_traces_are_sampled_by_the_ratio_and_their_children_follow() {
    sink();
    let (mut kept, mut dropped) = (0, 0);
    for _ in 0..400 {
        let root = Span::start_in(&trace::Parent::root(), "root", SpanKind::Server, Vec::new());
        let (trace_id, root_id) = ids(&root);
        root.around(async {
            Span::start("child", SpanKind::Internal, Vec::new()).end();
        })
        .await;
        root.end();
        let seen = of_trace(trace_id);
        match seen.len() {
            0 => dropped += 1,
            2 => {
                kept += 1;
                let child = seen.iter().find(|s| s.name == "child").expect("child");
                assert_eq!(child.parent, root_id);
                let root = seen.iter().find(|s| s.name == "root").expect("root");
                assert_eq!(root.parent, SpanId::INVALID);
            }
            n => panic!("a trace is sampled whole or not at all: {n} of 2 spans"),
        }
    }
    // Half of 400, give or take what chance allows (p < 1e-9 outside this band).
    assert!(
        (130..=270).contains(&kept),
        "{kept} kept, {dropped} dropped"
    );
}
