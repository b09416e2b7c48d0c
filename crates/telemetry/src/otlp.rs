//! Finished spans encoded as OTLP protobuf (`ExportTraceServiceRequest`), straight from a
//! [`Finished`] span into bytes, where it ends.
//!
//! Why not `opentelemetry-proto`'s message structs, as `opentelemetry-otlp` does: turning each
//! span into them (a `String` per attribute key and value, a struct per value, a `HashMap` to
//! group spans by scope), having prost recompute lengths at every nesting level and dropping it
//! all again was about half of what tracing cost per call (bench/README.md, telemetry). Here a
//! batch is one buffer of encoded spans; the resource and the scope (mcpflow has one) are
//! encoded once.
//! The tests decode what this writes with the official definitions and compare it with
//! `opentelemetry-proto`'s own conversion.

use opentelemetry::trace::{SpanId, SpanKind, Status};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::Resource;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::trace::Finished;

/// `SpanFlags` bits of OTLP: whether the parent's remoteness is known, and that it is remote.
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

/// A resource encoded once, for every request that carries its spans.
#[derive(Debug, Clone, Default)]
pub struct EncodedResource {
    /// The `Resource` message's body.
    body: Vec<u8>,
    schema_url: String,
}

impl From<&Resource> for EncodedResource {
    fn from(resource: &Resource) -> Self {
        let mut body = Vec::new();
        for (key, value) in resource.iter() {
            key_value(&mut body, 1, key.as_str(), value);
        }
        EncodedResource {
            body,
            schema_url: resource.schema_url().unwrap_or_default().to_owned(),
        }
    }
}

/// The instrumentation scope every span of a request belongs to, encoded once.
#[derive(Debug, Clone, Default)]
pub struct EncodedScope {
    /// The `InstrumentationScope` message's body.
    body: Vec<u8>,
    schema_url: String,
}

impl From<&InstrumentationScope> for EncodedScope {
    fn from(scope: &InstrumentationScope) -> Self {
        EncodedScope {
            body: scope_body(scope),
            schema_url: scope.schema_url().unwrap_or_default().to_owned(),
        }
    }
}

/// Spans encoded as they end, waiting to be sent together.
#[derive(Debug, Default)]
pub struct SpanBatch {
    /// Each span as a `ScopeSpans.spans` field (tag, length, body), one after the other.
    spans: Vec<u8>,
    count: usize,
}

impl SpanBatch {
    pub fn new() -> Self {
        SpanBatch::default()
    }

    /// A batch with room for `bytes` of encoded spans: growing one span at a time copied the
    /// whole batch at each doubling.
    pub fn with_capacity(bytes: usize) -> Self {
        SpanBatch {
            spans: Vec::with_capacity(bytes),
            count: 0,
        }
    }

    /// Bytes of encoded spans held.
    pub fn encoded_bytes(&self) -> usize {
        self.spans.len()
    }

    /// How many spans the batch holds.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds `span`.
    pub fn push(&mut self, span: &Finished<'_>) {
        nested(&mut self.spans, 2, |out| span_body(out, span));
        self.count += 1;
    }

    /// The `ScopeSpans` message's length.
    fn encoded_len(&self, scope: &EncodedScope) -> usize {
        field_len(1, scope.body.len()) + self.spans.len() + string_len(3, &scope.schema_url)
    }
}

/// The `ExportTraceServiceRequest` carrying `batch` (no `ScopeSpans` when it is empty) under
/// `resource` and `scope`.
pub fn request(resource: &EncodedResource, scope: &EncodedScope, batch: &SpanBatch) -> Vec<u8> {
    let scope_spans = if batch.is_empty() {
        0
    } else {
        field_len(2, batch.encoded_len(scope))
    };
    let resource_spans =
        field_len(1, resource.body.len()) + scope_spans + string_len(3, &resource.schema_url);
    let mut out = Vec::with_capacity(field_len(1, resource_spans));
    frame(&mut out, 1, resource_spans);
    frame(&mut out, 1, resource.body.len());
    out.extend_from_slice(&resource.body);
    if !batch.is_empty() {
        frame(&mut out, 2, batch.encoded_len(scope));
        frame(&mut out, 1, scope.body.len());
        out.extend_from_slice(&scope.body);
        out.extend_from_slice(&batch.spans);
        string(&mut out, 3, &scope.schema_url);
    }
    string(&mut out, 3, &resource.schema_url);
    out
}

fn scope_body(scope: &InstrumentationScope) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 1, scope.name());
    string(&mut out, 2, scope.version().unwrap_or_default());
    attributes(&mut out, 3, scope.attributes());
    out
}

fn span_body(out: &mut Vec<u8>, span: &Finished<'_>) {
    bytes(out, 1, &span.trace_id.to_bytes());
    bytes(out, 2, &span.span_id.to_bytes());
    string(out, 3, span.trace_state);
    if span.parent_span_id != SpanId::INVALID {
        bytes(out, 4, &span.parent_span_id.to_bytes());
    }
    string(out, 5, span.name);
    varint(out, 6, kind(&span.kind));
    fixed64(out, 7, nanos(span.start));
    fixed64(out, 8, nanos(span.end));
    attributes(out, 9, span.attributes);
    // Always present, as the SDK's own conversion sends it.
    nested(out, 15, |out| {
        let (code, message) = match span.status {
            Status::Unset => (0, ""),
            Status::Ok => (1, ""),
            Status::Error { description } => (2, description.as_ref()),
        };
        string(out, 2, message);
        varint(out, 3, code);
    });
    fixed32(out, 16, flags(span.parent_is_remote, span.flags.to_u8()));
}

fn flags(remote: bool, trace_flags: u8) -> u32 {
    u32::from(trace_flags) | HAS_IS_REMOTE | if remote { IS_REMOTE } else { 0 }
}

fn kind(kind: &SpanKind) -> u64 {
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn attributes<'a>(out: &mut Vec<u8>, tag: u32, list: impl IntoIterator<Item = &'a KeyValue>) {
    for kv in list {
        key_value(out, tag, kv.key.as_str(), &kv.value);
    }
}

fn key_value(out: &mut Vec<u8>, tag: u32, key: &str, value: &Value) {
    nested(out, tag, |out| {
        string(out, 1, key);
        nested(out, 2, |out| any_value(out, value));
    });
}

/// An `AnyValue`'s body: its one field is written even when it holds the default, as a
/// `oneof` is.
fn any_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Bool(b) => one_varint(out, 2, u64::from(*b)),
        Value::I64(i) => one_varint(out, 3, *i as u64),
        Value::F64(f) => one_fixed64(out, 4, f.to_bits()),
        Value::String(s) => one_string(out, 1, s.as_str()),
        Value::Array(array) => nested(out, 5, |out| match array {
            Array::Bool(items) => items
                .iter()
                .for_each(|b| nested(out, 1, |out| one_varint(out, 2, u64::from(*b)))),
            Array::I64(items) => items
                .iter()
                .for_each(|i| nested(out, 1, |out| one_varint(out, 3, *i as u64))),
            Array::F64(items) => items
                .iter()
                .for_each(|f| nested(out, 1, |out| one_fixed64(out, 4, f.to_bits()))),
            Array::String(items) => items
                .iter()
                .for_each(|s| nested(out, 1, |out| one_string(out, 1, s.as_str()))),
            // A kind of array added to the API later: its text, rather than nothing.
            other => nested(out, 1, |out| one_string(out, 1, &other.to_string())),
        }),
        // A kind of value added to the API later: its text, rather than nothing.
        other => one_string(out, 1, &other.as_str()),
    }
}

/// A length-delimited field whose body `write` appends; the length is written in front of it
/// afterwards (one byte is kept for it, and the body moved along when it needs more).
fn nested(out: &mut Vec<u8>, tag: u32, write: impl FnOnce(&mut Vec<u8>)) {
    encode_key(tag, WireType::LengthDelimited, out);
    let at = out.len();
    out.push(0);
    write(out);
    let len = out.len() - at - 1;
    let width = encoded_len_varint(len as u64);
    if width > 1 {
        let end = out.len();
        out.resize(end + width - 1, 0);
        out.copy_within(at + 1..end, at + width);
    }
    let mut slot = &mut out[at..at + width];
    encode_varint(len as u64, &mut slot);
}

/// The key and length of a length-delimited field whose body follows.
fn frame(out: &mut Vec<u8>, tag: u32, len: usize) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(len as u64, out);
}

fn field_len(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

fn string_len(tag: u32, text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        field_len(tag, text.len())
    }
}

/// A string field, left out when empty (proto3's default).
fn string(out: &mut Vec<u8>, tag: u32, text: &str) {
    if !text.is_empty() {
        one_string(out, tag, text);
    }
}

fn one_string(out: &mut Vec<u8>, tag: u32, text: &str) {
    bytes(out, tag, text.as_bytes());
}

fn bytes(out: &mut Vec<u8>, tag: u32, value: &[u8]) {
    frame(out, tag, value.len());
    out.extend_from_slice(value);
}

/// A varint field, left out when zero (proto3's default).
fn varint(out: &mut Vec<u8>, tag: u32, value: u64) {
    if value != 0 {
        one_varint(out, tag, value);
    }
}

fn one_varint(out: &mut Vec<u8>, tag: u32, value: u64) {
    encode_key(tag, WireType::Varint, out);
    encode_varint(value, out);
}

fn fixed64(out: &mut Vec<u8>, tag: u32, value: u64) {
    if value != 0 {
        one_fixed64(out, tag, value);
    }
}

fn one_fixed64(out: &mut Vec<u8>, tag: u32, value: u64) {
    encode_key(tag, WireType::SixtyFourBit, out);
    out.extend_from_slice(&value.to_le_bytes());
}

fn fixed32(out: &mut Vec<u8>, tag: u32, value: u32) {
    if value != 0 {
        encode_key(tag, WireType::ThirtyTwoBit, out);
        out.extend_from_slice(&value.to_le_bytes());
    }
}
