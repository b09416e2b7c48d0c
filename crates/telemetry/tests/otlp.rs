//! `otlp`'s bytes, decoded with the official OTLP definitions, are what `opentelemetry-proto`'s
//! own conversion of the same spans gives.

use std::borrow::Cow;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use mcpflow_telemetry::otlp::{EncodedResource, EncodedScope, SpanBatch, request};
use mcpflow_telemetry::trace::Finished;
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use prost::Message;

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("mcpflow")
        .with_version("1.2.3")
        .with_schema_url("https://opentelemetry.io/schemas/1.30.0")
        .with_attributes([KeyValue::new("scope.attr", 7)])
        .build()
}

const STATE: &str = "vendor=v1";

/// Every kind of value, lengths past one and two varint bytes, text that is not ASCII.
fn attributes() -> Vec<KeyValue> {
    vec![
        KeyValue::new("mcp.method.name", "tools/call"),
        KeyValue::new("empty", ""),
        KeyValue::new("long", "x".repeat(200)),
        KeyValue::new("longer", "ü".repeat(9_000)),
        KeyValue::new("negative", -42_i64),
        KeyValue::new("zero", 0_i64),
        KeyValue::new("max", i64::MAX),
        KeyValue::new("double", -0.5_f64),
        KeyValue::new("false", false),
        KeyValue::new("true", true),
        KeyValue::new("bools", Value::Array(Array::Bool(vec![true, false]))),
        KeyValue::new("ints", Value::Array(Array::I64(vec![1, -1, 0]))),
        KeyValue::new("doubles", Value::Array(Array::F64(vec![1.5, 0.0]))),
        KeyValue::new(
            "strings",
            Value::Array(Array::String(vec![
                StringValue::from("a"),
                StringValue::from(""),
            ])),
        ),
        KeyValue::new("no items", Value::Array(Array::I64(Vec::new()))),
    ]
}

/// A span as the sink sees it, owned: the test's spans are made of these.
struct Owned {
    n: u64,
    status: Status,
    parent: SpanId,
    remote_parent: bool,
    name: String,
    attributes: Vec<KeyValue>,
}

impl Owned {
    fn start(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_nanos(1_764_000_000_123_456_789 + self.n)
    }

    fn kind(&self) -> SpanKind {
        [
            SpanKind::Internal,
            SpanKind::Server,
            SpanKind::Client,
            SpanKind::Producer,
            SpanKind::Consumer,
        ][(self.n % 5) as usize]
            .clone()
    }

    fn finished(&self) -> Finished<'_> {
        Finished {
            trace_id: TraceId::from(0xabc0 + u128::from(self.n)),
            span_id: SpanId::from(0x10 + self.n),
            flags: TraceFlags::SAMPLED,
            // Only some spans inherit a trace state.
            trace_state: if self.n.is_multiple_of(2) { STATE } else { "" },
            parent_span_id: self.parent,
            parent_is_remote: self.remote_parent,
            name: &self.name,
            kind: self.kind(),
            start: self.start(),
            end: self.start() + Duration::from_micros(250),
            attributes: &self.attributes,
            status: &self.status,
        }
    }

    /// The same span as the SDK's `SpanData`, for the official conversion.
    fn span_data(&self) -> SpanData {
        let span = self.finished();
        let state = TraceState::from_str(span.trace_state).expect("a valid trace state");
        SpanData {
            span_context: SpanContext::new(span.trace_id, span.span_id, span.flags, false, state),
            parent_span_id: span.parent_span_id,
            parent_span_is_remote: span.parent_is_remote,
            span_kind: span.kind,
            name: Cow::Owned(self.name.clone()),
            start_time: span.start,
            end_time: span.end,
            attributes: self.attributes.clone(),
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: self.status.clone(),
            instrumentation_scope: scope(),
        }
    }
}

fn span(n: u64, status: Status, parent: SpanId, remote_parent: bool) -> Owned {
    Owned {
        n,
        status,
        parent,
        remote_parent,
        name: format!("tools/call tool-{n}"),
        attributes: if n == 4 { Vec::new() } else { attributes() },
    }
}

fn spans() -> Vec<Owned> {
    vec![
        span(0, Status::Unset, SpanId::INVALID, false),
        span(1, Status::Ok, SpanId::from(0x10), false),
        span(
            2,
            Status::Error {
                description: Cow::Borrowed("upstream `x` failed: é"),
            },
            SpanId::from(0x11),
            true,
        ),
        span(3, Status::error(""), SpanId::from(0x12), true),
        span(4, Status::Unset, SpanId::from(0x13), false),
    ]
}

fn resource() -> Resource {
    Resource::builder_empty()
        .with_service_name("mcpflow-test")
        .with_attributes([KeyValue::new("deployment.environment", "ci")])
        .with_schema_url(
            [KeyValue::new("host.name", "h")],
            "https://opentelemetry.io/schemas/1.29.0",
        )
        .build()
}

fn theirs(spans: &[Owned], resource: &Resource) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(
            spans.iter().map(Owned::span_data).collect(),
            &ResourceAttributesWithSchema::from(resource),
        ),
    }
}

#[test]
fn encoded_spans_decode_to_the_sdk_conversion() {
    let resource = resource();
    let spans = spans();
    let mut batch = SpanBatch::new();
    for span in &spans {
        batch.push(&span.finished());
    }
    assert_eq!(batch.len(), 5);
    let bytes = request(
        &EncodedResource::from(&resource),
        &EncodedScope::from(&scope()),
        &batch,
    );
    let ours = ExportTraceServiceRequest::decode(bytes.as_slice()).expect("bytes OTLP decodes");
    let theirs = theirs(&spans, &resource);
    assert_eq!(ours, theirs);
    // And byte for byte what prost writes for them, so a strict collector sees nothing new.
    assert_eq!(bytes.len(), theirs.encoded_len());
}

#[test]
fn no_spans_and_an_empty_resource_still_decode() {
    let resource = Resource::builder_empty().build();
    let bytes = request(
        &EncodedResource::from(&resource),
        &EncodedScope::from(&scope()),
        &SpanBatch::new(),
    );
    let ours = ExportTraceServiceRequest::decode(bytes.as_slice()).expect("decodes");
    assert_eq!(ours, theirs(&[], &resource));
}
