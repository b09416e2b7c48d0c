//! `otlp`'s bytes, decoded with the official OTLP definitions, are what `opentelemetry-proto`'s
//! own conversion of the same spans gives.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use mcpflow_telemetry::otlp::{EncodedResource, SpanBatch, request};
use opentelemetry::trace::{
    Event, Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
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

fn context(trace: u128, span: u64, remote: bool) -> SpanContext {
    let state = TraceState::from_key_value([("vendor", "v1")]).expect("a valid trace state");
    SpanContext::new(
        TraceId::from(trace),
        SpanId::from(span),
        TraceFlags::SAMPLED,
        remote,
        state,
    )
}

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

fn span(n: u64, status: Status, parent: SpanId, remote_parent: bool) -> SpanData {
    let start = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_764_000_000_123_456_789 + n);
    // Both are non-exhaustive: made by default, then filled.
    let mut events = SpanEvents::default();
    events.events = vec![Event::new(
        "exception",
        start,
        vec![KeyValue::new("exception.message", "boom")],
        1,
    )];
    events.dropped_count = 2;
    let mut links = SpanLinks::default();
    links.links = vec![Link::new(
        context(0xfeed, 0xbeef, true),
        vec![KeyValue::new("link", true)],
        3,
    )];
    SpanData {
        span_context: context(0xabc0 + u128::from(n), 0x10 + n, false),
        parent_span_id: parent,
        parent_span_is_remote: remote_parent,
        span_kind: [
            SpanKind::Internal,
            SpanKind::Server,
            SpanKind::Client,
            SpanKind::Producer,
            SpanKind::Consumer,
        ][(n % 5) as usize]
            .clone(),
        name: Cow::Owned(format!("tools/call tool-{n}")),
        start_time: start,
        end_time: start + Duration::from_micros(250),
        attributes: attributes(),
        dropped_attributes_count: n as u32,
        events,
        links,
        status,
        instrumentation_scope: scope(),
    }
}

fn spans() -> Vec<SpanData> {
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

#[test]
fn encoded_spans_decode_to_the_sdk_conversion() {
    let resource = resource();
    let mut batch = SpanBatch::new(scope());
    for span in spans() {
        batch.push(&span);
    }
    assert_eq!(batch.len(), 5);
    let bytes = request(&EncodedResource::from(&resource), &[batch]);
    let ours = ExportTraceServiceRequest::decode(bytes.as_slice()).expect("bytes OTLP decodes");
    let theirs = ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(
            spans(),
            &ResourceAttributesWithSchema::from(&resource),
        ),
    };
    assert_eq!(ours, theirs);
    // And byte for byte what prost writes for them, so a strict collector sees nothing new.
    assert_eq!(bytes.len(), theirs.encoded_len());
}

#[test]
fn spans_of_two_scopes_are_grouped_as_the_sdk_groups_them() {
    let resource = resource();
    let other = InstrumentationScope::builder("other").build();
    let mut spans = spans();
    spans[1].instrumentation_scope = other.clone();
    spans[3].instrumentation_scope = other.clone();
    let mut batches = vec![SpanBatch::new(scope()), SpanBatch::new(other)];
    for span in &spans {
        let batch = batches
            .iter_mut()
            .find(|b| *b.scope() == span.instrumentation_scope)
            .expect("a batch per scope");
        batch.push(span);
    }
    let bytes = request(&EncodedResource::from(&resource), &batches);
    let ours = ExportTraceServiceRequest::decode(bytes.as_slice()).expect("decodes");
    let theirs = ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(
            spans,
            &ResourceAttributesWithSchema::from(&resource),
        ),
    };
    assert_eq!(ours, theirs);
}

#[test]
fn no_spans_and_an_empty_resource_still_decode() {
    let resource = Resource::builder_empty().build();
    let bytes = request(&EncodedResource::from(&resource), &[]);
    let ours = ExportTraceServiceRequest::decode(bytes.as_slice()).expect("decodes");
    let theirs = ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(
            Vec::new(),
            &ResourceAttributesWithSchema::from(&resource),
        ),
    };
    assert_eq!(ours, theirs);
}
