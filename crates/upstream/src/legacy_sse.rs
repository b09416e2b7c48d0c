//! The client side of the legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp no longer has:
//! `GET` the SSE URL, wait for the `endpoint` event, `POST` each JSON-RPC message to that
//! endpoint, read every answer from the one SSE stream.
//!
//! The session lives exactly as long as the `GET` stream: when it ends, [`receive`] returns
//! `None`, rmcp closes the service, and the pool connects afresh on the next call.
//!
//! [`receive`]: rmcp::transport::Transport::receive

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use sse_stream::SseStream;
use tokio::sync::mpsc;

use crate::identity::CallerHeaders;

/// Largest SSE event accepted from an upstream; a bigger one ends the session rather than
/// growing memory without bound.
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Messages read ahead of the service; the reader waits when the service is this far behind.
const INCOMING_BUFFER: usize = 256;

/// Why a message could not be delivered. It never holds the URL (that may carry credentials).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct LegacySseError(String);

pub(crate) struct LegacySseTransport {
    client: reqwest::Client,
    endpoint: Url,
    post_timeout: Duration,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl LegacySseTransport {
    /// Opens the SSE stream and waits for the server to name its message endpoint. POSTs that
    /// take longer than `post_timeout` fail (some servers never answer a POST for a session
    /// they forgot).
    pub async fn open(
        client: reqwest::Client,
        url: Url,
        post_timeout: Duration,
        shown_url: Arc<str>,
    ) -> Result<LegacySseTransport, String> {
        let response = client
            .get(url.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| crate::cause::explain(&e))?;
        let status = response.status();
        if !status.is_success() {
            return Err(crate::cause::explain_text(&format!(
                "GET of the SSE stream answered HTTP {status}"
            )));
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        if !content_type.starts_with("text/event-stream") {
            return Err(format!(
                "the URL answered with content type `{content_type}`, not an SSE stream \
                 (is this a `streamableHttp` server?)"
            ));
        }
        let mut events = Box::pin(SseStream::from_bytes_stream(bounded(
            response.bytes_stream(),
        )));

        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                    let data = event.data.unwrap_or_default();
                    let endpoint = url.join(data.trim()).map_err(|e| {
                        format!("the `endpoint` event does not hold a usable URI: {e}")
                    })?;
                    // The endpoint gets our headers (often credentials): never another origin.
                    if endpoint.origin() != url.origin() {
                        return Err("the `endpoint` event names another origin than the SSE URL"
                            .to_string());
                    }
                    break endpoint;
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(format!("the SSE stream broke: {e}")),
                None => {
                    return Err("the SSE stream ended before the `endpoint` event".to_string());
                }
            }
        };

        let (tx, incoming) = mpsc::channel(INCOMING_BUFFER);
        let reader = tokio::spawn(read_messages(events, tx, shown_url));
        Ok(LegacySseTransport {
            client,
            endpoint,
            post_timeout,
            incoming,
            reader,
        })
    }
}

/// Forwards the stream's `message` events to the service until the stream or the service ends.
async fn read_messages(
    mut events: impl Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Unpin,
    tx: mpsc::Sender<ServerJsonRpcMessage>,
    shown_url: Arc<str>,
) {
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(url = %shown_url, %error, "legacy SSE stream broke");
                return;
            }
        };
        if !matches!(event.event.as_deref(), None | Some("message")) {
            continue;
        }
        let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
            continue;
        };
        match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
            Ok(message) => {
                if tx.send(message).await.is_err() {
                    return;
                }
            }
            Err(error) => {
                tracing::warn!(url = %shown_url, %error, "skipping an SSE message that is not JSON-RPC");
            }
        }
    }
    tracing::debug!(url = %shown_url, "legacy SSE stream ended");
}

impl Transport<RoleClient> for LegacySseTransport {
    type Error = LegacySseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let mut request = self
            .client
            .post(self.endpoint.clone())
            .timeout(self.post_timeout);
        if let Some(caller) = CallerHeaders::of(&item) {
            for (name, value) in caller.iter() {
                request = request.header(name.clone(), value.clone());
            }
        }
        let request = request.json(&item);
        async move {
            let response = request
                .send()
                .await
                .map_err(|e| LegacySseError(format!("POST failed: {}", describe(e))))?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                Err(LegacySseError(format!("POST answered HTTP {status}")))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.reader.abort();
        self.incoming.close();
        std::future::ready(Ok(()))
    }
}

impl Drop for LegacySseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// reqwest's error without the URL (it may carry credentials), plus its cause, which says
/// what actually went wrong ("connection refused").
fn describe(error: reqwest::Error) -> String {
    let timed_out = error.is_timeout();
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    if timed_out {
        text.push_str(" (timed out)");
    }
    text
}

/// Fails the stream once the bytes since the last blank line (an event's end) pass
/// [`MAX_EVENT_BYTES`]: the SSE parser would otherwise buffer an endless event.
fn bounded<B: AsRef<[u8]>>(
    stream: impl Stream<Item = reqwest::Result<B>>,
) -> impl Stream<Item = std::io::Result<B>> {
    let mut since_boundary = 0usize;
    let mut newline_seen = false;
    stream.map(move |chunk| {
        let chunk = chunk.map_err(|e| std::io::Error::other(describe(e)))?;
        for &byte in chunk.as_ref() {
            match byte {
                b'\n' if newline_seen => since_boundary = 0,
                b'\n' => newline_seen = true,
                b'\r' => {}
                _ => newline_seen = false,
            }
            since_boundary += 1;
        }
        if since_boundary > MAX_EVENT_BYTES {
            return Err(std::io::Error::other(format!(
                "an SSE event exceeded {MAX_EVENT_BYTES} bytes"
            )));
        }
        Ok(chunk)
    })
}
