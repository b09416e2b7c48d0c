//! The `telemetry:` section: traces exported over OTLP and metrics in Prometheus's text format.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What mcpflow tells the outside about its work. Without the section, metrics are served at
/// `/metrics` of the HTTP listener and traces are exported only when the standard
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) variable names a collector.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The `service.name` of every span (default: `OTEL_SERVICE_NAME`, else the config's
    /// `server.name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Spans exported over OTLP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<TracesConfig>,
    /// Prometheus metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsConfig>,
}

/// Where and how spans go. Each key falls back to its standard `OTEL_*` variable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TracesConfig {
    /// `false` exports nothing, whatever the environment says (default `true` when an
    /// endpoint is known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The collector: `http://host:4318` for `http/protobuf` (`/v1/traces` is appended), or
    /// `http://host:4317` for `grpc` (default: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, then
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The OTLP transport (default: `OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/protobuf`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<OtlpProtocol>,
    /// Headers sent with every export (an API key of a hosted collector: write it as
    /// `${VAR}`). They are never logged.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// The share of traces started here that are kept, 0 to 1 (default 1). A request that
    /// arrives with a `traceparent` follows its caller's decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub sampling_ratio: Option<f64>,
    /// Put tool arguments in span attributes (`mcp.tool.arguments`, at most 4 KiB). Off by
    /// default: arguments may hold what a client wants kept private.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_arguments: Option<bool>,
}

/// The OTLP transports mcpflow exports over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum OtlpProtocol {
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    #[serde(rename = "grpc")]
    Grpc,
}

/// Prometheus metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricsConfig {
    /// `false` keeps no metric at all (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// A listener of its own for `/metrics`, as `host:port`: the way to scrape a server
    /// that serves over stdio (default: none; with `--http` they are at `/metrics` there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}
