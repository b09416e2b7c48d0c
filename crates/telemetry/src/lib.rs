//! mcpflow telemetry: the process's signals, which every other crate records into and only the
//! binary turns on.
//!
//! - [`metrics`]: the Prometheus series (their names, labels and help are all here, so the
//!   exposition is one document), recorded through plain functions that do nothing until the
//!   binary calls [`metrics::install`].
//! - [`trace`]: spans go through `tracing` under one target, [`trace::TARGET`], and reach
//!   OpenTelemetry through [`trace::Exporting`], a layer that stays empty (and makes every such
//!   span a no-op) until the binary hands it an exporter; W3C trace context is taken from what
//!   a client sent (`traceparent` in `_meta` or an HTTP header) and put on what goes upstream.
//!
//! This crate owns no exporter, no socket and no thread: the OTLP pipeline is the binary's.

pub mod metrics;
pub mod trace;
