//! mcpflow telemetry: the process's signals, which every other crate records into and only the
//! binary turns on.
//!
//! - [`metrics`]: the Prometheus series (their names, labels and help are all here, so the
//!   exposition is one document), recorded through plain functions that do nothing until the
//!   binary calls [`metrics::install`].
//! - [`trace`]: spans of our own, sampled as OpenTelemetry's samplers do and handed as they end
//!   to the sink the binary installs (empty, at the cost of an atomic load, until it does),
//!   each made current while its work is polled so that the spans started inside are its
//!   children; W3C trace context is taken from what a client sent (`traceparent` in `_meta`
//!   or an HTTP header) and put on what goes upstream.
//! - [`otlp`]: finished spans encoded as OTLP protobuf, for the binary's exporter to send.
//!
//! This crate owns no exporter, no socket and no thread: the OTLP pipeline is the binary's.

pub mod metrics;
pub mod otlp;
pub mod trace;
