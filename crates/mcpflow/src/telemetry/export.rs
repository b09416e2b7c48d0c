//! The OTLP transport behind the span processor (`processor.rs`): a request already encoded
//! to protobuf (`mcpflow_telemetry::otlp`) is sent over HTTP or gRPC on the process's own
//! runtime, as `opentelemetry-otlp` would send it.
//!
//! Why not `opentelemetry-otlp`'s exporter: its conversion through `opentelemetry-proto`'s
//! structs was half of what a traced call cost (bench/README.md, telemetry). What it read from
//! the environment is read here the same way: `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`,
//! `…_HEADERS` (`k=v,…`, values percent-decoded) and `…_TIMEOUT` (milliseconds).

use std::fmt;
use std::time::Duration;

use bytes::{Buf, BufMut};
use mcpflow_config::telemetry::OtlpProtocol;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::MetadataMap;

use super::env;

const HTTP_DEFAULT: &str = "http://localhost:4318/v1/traces";
const GRPC_DEFAULT: &str = "http://localhost:4317";
const GRPC_EXPORT: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how spans go: the config's values, else the standard environment variables.
pub(super) struct Destination {
    pub protocol: OtlpProtocol,
    /// The config's endpoint, as written.
    pub endpoint: Option<String>,
    /// The config's headers, `${VAR}` already replaced; they win over the environment's.
    pub headers: Vec<(String, String)>,
}

pub(super) struct Exporter {
    send: Transport,
    runtime: tokio::runtime::Handle,
    timeout: Duration,
}

#[derive(Clone)]
enum Transport {
    Http {
        client: reqwest::Client,
        url: String,
        headers: HeaderMap,
    },
    Grpc {
        channel: tonic::transport::Channel,
        metadata: MetadataMap,
    },
}

impl fmt::Debug for Exporter {
    // Headers may hold a collector's key: never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Exporter {
    /// Needs to run inside the tokio runtime that will do the sending.
    pub(super) fn new(to: Destination) -> Result<(Self, String), String> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| "telemetry.traces: the exporter needs the async runtime".to_owned())?;
        let timeout = timeout_from_env();
        let headers = headers(&to.headers);
        let (send, shown) = match to.protocol {
            OtlpProtocol::HttpProtobuf => {
                let url = to
                    .endpoint
                    .map(|e| config_traces_url(&e))
                    .or_else(|| env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
                    .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT").map(|e| traces_path(&e)))
                    .unwrap_or_else(|| HTTP_DEFAULT.to_owned());
                let mut map = HeaderMap::new();
                for (name, value) in &headers {
                    let (name, value) = header(name, value)?;
                    map.insert(name, value);
                }
                map.insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static("application/x-protobuf"),
                );
                let client = reqwest::Client::builder()
                    .timeout(timeout)
                    .build()
                    .map_err(|e| format!("telemetry.traces: cannot make the HTTP client: {e}"))?;
                let send = Transport::Http {
                    client,
                    url: url.clone(),
                    headers: map,
                };
                (send, url)
            }
            OtlpProtocol::Grpc => {
                let url = to
                    .endpoint
                    .or_else(|| env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
                    .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT"))
                    .unwrap_or_else(|| GRPC_DEFAULT.to_owned());
                if url.starts_with("https://") {
                    return Err(format!(
                        "telemetry.traces: `{url}`: gRPC over TLS is not built in; \
                         use `protocol: http/protobuf` with an https:// collector"
                    ));
                }
                let mut map = HeaderMap::new();
                for (name, value) in &headers {
                    let (name, value) = header(&name.to_ascii_lowercase(), value)?;
                    map.insert(name, value);
                }
                let channel = tonic::transport::Endpoint::from_shared(url.clone())
                    .map_err(|e| format!("telemetry.traces: `{url}` is not a gRPC endpoint: {e}"))?
                    .timeout(timeout)
                    .connect_lazy();
                let send = Transport::Grpc {
                    channel,
                    metadata: MetadataMap::from_headers(map),
                };
                (send, url)
            }
        };
        let exporter = Exporter {
            send,
            runtime,
            timeout,
        };
        Ok((exporter, shown))
    }
}

impl Exporter {
    /// Sends one encoded `ExportTraceServiceRequest`, waiting for the answer. Called from the
    /// span processor's own thread, which has no reactor: the sending runs on the runtime.
    pub(super) fn send(&self, body: Vec<u8>) -> Result<(), String> {
        let send = self.send.clone();
        let timeout = self.timeout;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let result = match tokio::time::timeout(timeout, send.send(body)).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "the collector did not answer within {} ms",
                    timeout.as_millis()
                )),
            };
            let _ = tx.send(result);
        });
        rx.recv()
            .unwrap_or_else(|_| Err("the export task ended (the runtime stopped)".to_owned()))
    }
}

impl Transport {
    async fn send(self, body: Vec<u8>) -> Result<(), String> {
        match self {
            Transport::Http {
                client,
                url,
                headers,
            } => {
                let answer = client
                    .post(&url)
                    .headers(headers)
                    .body(body)
                    .send()
                    .await
                    .map_err(|e| format!("cannot send spans to {url}: {e}"))?;
                let status = answer.status();
                if status.is_success() {
                    Ok(())
                } else {
                    Err(format!("the collector at {url} answered {status}"))
                }
            }
            Transport::Grpc { channel, metadata } => {
                let mut grpc = tonic::client::Grpc::new(channel);
                grpc.ready()
                    .await
                    .map_err(|e| format!("the gRPC collector is not reachable: {e}"))?;
                let mut request = tonic::Request::new(body);
                *request.metadata_mut() = metadata;
                let path = http::uri::PathAndQuery::from_static(GRPC_EXPORT);
                grpc.unary(request, path, Raw)
                    .await
                    .map(|_| ())
                    .map_err(|status| format!("the gRPC collector refused the spans: {status}"))
            }
        }
    }
}

/// `OTEL_EXPORTER_OTLP_ENDPOINT` is the collector's base: the traces path goes after it.
fn traces_path(base: &str) -> String {
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

/// A config endpoint for OTLP/HTTP: the collector's base URL gets the traces path, as
/// `OTEL_EXPORTER_OTLP_ENDPOINT` does; a URL with a path is taken as it is.
fn config_traces_url(endpoint: &str) -> String {
    let rest = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest);
    match rest.find('/') {
        Some(i) if rest[i..] != *"/" => endpoint.to_owned(),
        _ => traces_path(endpoint),
    }
}

fn timeout_from_env() -> Duration {
    [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .into_iter()
    .find_map(|name| env(name).and_then(|v| v.trim().parse::<u64>().ok()))
    .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
}

/// The environment's headers (`k=v,k2=v2`, values percent-decoded, the traces variable over
/// the general one), then the config's over both.
fn headers(config: &[(String, String)]) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = Vec::new();
    let mut add = |name: &str, value: String| {
        all.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        all.push((name.to_owned(), value));
    };
    for var in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        for pair in env(var).unwrap_or_default().split(',') {
            if let Some((name, value)) = pair.split_once('=') {
                let (name, value) = (name.trim(), value.trim());
                if !name.is_empty() && !value.is_empty() {
                    let decoded = percent_encoding::percent_decode_str(value)
                        .decode_utf8()
                        .map_or_else(|_| value.to_owned(), |v| v.into_owned());
                    add(name, decoded);
                }
            }
        }
    }
    for (name, value) in config {
        add(name, value.clone());
    }
    all
}

fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), String> {
    let key = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("telemetry.traces.headers: `{name}` is not a header name"))?;
    // The value is a secret: never in the message.
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        format!("telemetry.traces.headers.{name}: the value is not valid in a header")
    })?;
    value.set_sensitive(true);
    Ok((key, value))
}

/// gRPC framing of bytes already encoded: the request is the `otlp` encoder's, the answer
/// (an `ExportTraceServiceResponse`) is not needed.
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = ();
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = ();
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<()>, tonic::Status> {
        src.advance(src.remaining());
        Ok(Some(()))
    }
}

#[cfg(test)]
mod tests {
    use super::{config_traces_url, traces_path};

    #[test]
    fn the_base_endpoint_gets_the_traces_path() {
        assert_eq!(traces_path("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_path("http://c:4318/"), "http://c:4318/v1/traces");
    }

    #[test]
    fn a_configured_base_url_gets_the_traces_path() {
        assert_eq!(
            config_traces_url("http://c:4318"),
            "http://c:4318/v1/traces"
        );
        assert_eq!(
            config_traces_url("http://c:4318/"),
            "http://c:4318/v1/traces"
        );
        assert_eq!(
            config_traces_url("http://c/otlp/v1/traces"),
            "http://c/otlp/v1/traces"
        );
    }
}
