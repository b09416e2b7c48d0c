//! The process's logging and telemetry: the `tracing` subscriber (logs to stderr), the OTLP
//! trace pipeline `mcpflow_telemetry::trace`'s spans end into, and the metrics switch, from
//! the config's `telemetry:` section and the standard `OTEL_*` variables.

mod export;
mod processor;

use std::sync::Arc;

use mcpflow_config::telemetry::{OtlpProtocol, TelemetryConfig};
use mcpflow_telemetry::otlp::{EncodedResource, EncodedScope};
use mcpflow_telemetry::trace::{Pipeline, Sampler};
use opentelemetry::InstrumentationScope;
use tracing_subscriber::EnvFilter;

/// Logs to stderr as `MCPFLOW_LOG` says (else `default`).
pub fn init_logging(default: &str) {
    let filter = EnvFilter::try_from_env("MCPFLOW_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter)
        .init();
}

/// What was turned on; flushes and stops the exporter when dropped at the end of serving.
pub struct Telemetry {
    traces: Option<Arc<processor::EncodingProcessor>>,
}

impl Telemetry {
    /// Sends the spans still buffered and stops the exporter (blocking, so off the runtime's
    /// workers), within the exporter's own timeout.
    pub async fn shutdown(mut self) {
        if let Some(processor) = self.traces.take() {
            let _ = tokio::task::spawn_blocking(move || processor.shutdown()).await;
        }
    }
}

/// Turns on what `config` and the environment ask for: metrics unless switched off (for a
/// server), traces when a collector is named. `server_name` is the default `service.name`.
pub fn start(
    config: Option<&TelemetryConfig>,
    server_name: &str,
    metrics: bool,
) -> Result<Telemetry, String> {
    let metrics_on = metrics
        && config
            .and_then(|c| c.metrics.as_ref())
            .and_then(|m| m.enabled)
            .unwrap_or(true);
    if metrics_on {
        mcpflow_telemetry::metrics::install();
    }
    let traces = match traces_wanted(config) {
        None => None,
        Some(endpoint) => Some(start_traces(config, server_name, endpoint)?),
    };
    Ok(Telemetry { traces })
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Where spans go, when anywhere: `Some(None)` when only the environment names the collector
/// (the exporter reads it), `Some(Some(url))` from the config.
fn traces_wanted(config: Option<&TelemetryConfig>) -> Option<Option<String>> {
    let traces = config.and_then(|c| c.traces.as_ref());
    if traces.and_then(|t| t.enabled) == Some(false)
        || env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
    {
        return None;
    }
    if let Some(endpoint) = traces.and_then(|t| t.endpoint.clone()) {
        return Some(Some(endpoint));
    }
    let from_env =
        env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT"));
    if from_env.is_some() || traces.and_then(|t| t.enabled) == Some(true) {
        return Some(None);
    }
    None
}

fn protocol(config: Option<&TelemetryConfig>) -> Result<OtlpProtocol, String> {
    if let Some(p) = config
        .and_then(|c| c.traces.as_ref())
        .and_then(|t| t.protocol)
    {
        return Ok(p);
    }
    let var = [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]
    .into_iter()
    .find_map(|name| env(name).map(|v| (name, v)));
    match var {
        None => Ok(OtlpProtocol::HttpProtobuf),
        Some((_, v)) if v == "http/protobuf" => Ok(OtlpProtocol::HttpProtobuf),
        Some((_, v)) if v == "grpc" => Ok(OtlpProtocol::Grpc),
        Some((name, v)) => Err(format!(
            "{name}={v}: mcpflow exports traces over `http/protobuf` or `grpc`"
        )),
    }
}

fn start_traces(
    config: Option<&TelemetryConfig>,
    server_name: &str,
    endpoint: Option<String>,
) -> Result<Arc<processor::EncodingProcessor>, String> {
    let traces = config.and_then(|c| c.traces.clone()).unwrap_or_default();
    if let Some(url) = &endpoint
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(format!(
            "telemetry.traces.endpoint: `{url}` is not an http:// or https:// URL"
        ));
    }
    let protocol = protocol(config)?;
    // `${VAR}` in a header value, as in an upstream's headers; the value itself is a secret
    // and never appears in a message.
    let mut headers = Vec::new();
    for (name, value) in &traces.headers {
        let value = mcpflow_config::interpolate::interpolate_env(value)
            .map_err(|e| format!("telemetry.traces.headers.{name}: {e}"))?;
        headers.push((name.clone(), value));
    }
    let (exporter, shown) = export::Exporter::new(export::Destination {
        protocol,
        endpoint,
        headers,
    })?;
    let service = config
        .and_then(|c| c.service_name.clone())
        .or_else(|| env("OTEL_SERVICE_NAME"))
        .unwrap_or_else(|| server_name.to_owned());
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service)
        .build();
    let processor = Arc::new(processor::EncodingProcessor::new(
        exporter,
        processor::Settings::from_env(),
        EncodedResource::from(&resource),
        EncodedScope::from(&InstrumentationScope::builder("mcpflow").build()),
    )?);
    // Without a ratio in the config, OTEL_TRACES_SAMPLER (the SDK's default: parent-based,
    // always on) decides.
    let sampler = match traces.sampling_ratio {
        Some(ratio) => Sampler::parent_based_ratio(ratio),
        None => {
            let (sampler, warning) = Sampler::from_env(
                env("OTEL_TRACES_SAMPLER").as_deref(),
                env("OTEL_TRACES_SAMPLER_ARG").as_deref(),
            );
            if let Some(warning) = warning {
                tracing::warn!("traces: {warning}");
            }
            sampler
        }
    };
    mcpflow_telemetry::trace::install(Pipeline {
        sampler,
        sink: processor.clone(),
        record_arguments: traces.record_arguments.unwrap_or(false),
    });
    let protocol = match protocol {
        OtlpProtocol::HttpProtobuf => "http/protobuf",
        OtlpProtocol::Grpc => "grpc",
    };
    tracing::info!(endpoint = %shown, protocol, "exporting traces over OTLP");
    Ok(processor)
}
