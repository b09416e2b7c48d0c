//! What every HTTP request passes before a route sees it: the `Host` and `Origin` checks
//! against DNS rebinding (on every route, `/healthz` and `/readyz` included), the body read
//! with a size and time limit, and the global and per-session limits on requests in flight.
//!
//! rmcp's Streamable HTTP service checks `Host` too, but the legacy SSE endpoints are ours, and
//! one check in front of both keeps the two transports' answers the same.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::HttpOptions;
use super::origin::OriginPolicy;

pub(crate) struct Guard {
    /// The Host/Origin check (`origin.rs`, fuzzed on its own).
    origin: OriginPolicy,
    global: Arc<Semaphore>,
    /// The global limit: all of `global`'s permits when nothing is in flight.
    max_in_flight: usize,
    per_session: usize,
    sessions: Mutex<HashMap<String, Arc<Semaphore>>>,
    max_body_bytes: usize,
    body_read_timeout: std::time::Duration,
}

impl Guard {
    pub(crate) fn new(options: &HttpOptions) -> Self {
        Guard {
            origin: OriginPolicy::new(&options.allowed_hosts, &options.allowed_origins),
            global: Arc::new(Semaphore::new(options.limits.max_concurrent_requests)),
            max_in_flight: options.limits.max_concurrent_requests,
            per_session: options.limits.max_concurrent_requests_per_session,
            sessions: Mutex::new(HashMap::new()),
            max_body_bytes: options.limits.max_body_bytes,
            body_read_timeout: options.limits.body_read_timeout,
        }
    }

    /// Resolves once no request is in flight, and refuses new ones from then on (503): for
    /// shutdown, once the listener is closed.
    pub(crate) async fn settled(&self) {
        let all = u32::try_from(self.max_in_flight).unwrap_or(u32::MAX);
        if let Ok(permits) = self.global.acquire_many(all).await {
            permits.forget();
        }
    }

    /// One permit of the global limit and one of the session's: held until the response body
    /// (an SSE stream for a call that streams) has been sent or dropped.
    fn admit(&self, session: Option<&str>) -> Result<Permits, Refusal> {
        let global = self
            .global
            .clone()
            .try_acquire_owned()
            .map_err(|_| Refusal {
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: "server busy: too many requests in flight; retry later",
            })?;
        let session_permit = match session {
            None => None,
            Some(id) => {
                let semaphore = {
                    let mut map = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
                    // Forget sessions with nothing in flight, so the map stays as small as the
                    // number of sessions that are busy right now.
                    if map.len() > 1024 {
                        let full = self.per_session;
                        map.retain(|_, s| s.available_permits() < full);
                    }
                    map.entry(id.to_owned())
                        .or_insert_with(|| Arc::new(Semaphore::new(self.per_session)))
                        .clone()
                };
                Some(semaphore.try_acquire_owned().map_err(|_| Refusal {
                    status: StatusCode::TOO_MANY_REQUESTS,
                    message: "too many requests in flight in this session; retry later",
                })?)
            }
        };
        Ok(Permits {
            _global: global,
            _session: session_permit,
        })
    }
}

/// Why a request was not admitted.
struct Refusal {
    status: StatusCode,
    message: &'static str,
}

struct Permits {
    _global: OwnedSemaphorePermit,
    _session: Option<OwnedSemaphorePermit>,
}

/// The session a request belongs to: Streamable HTTP's header or legacy SSE's query parameter.
fn session_of(request: &Request) -> Option<String> {
    if let Some(id) = request.headers().get("mcp-session-id") {
        return id.to_str().ok().map(str::to_owned);
    }
    request.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("sessionId="))
            .map(str::to_owned)
    })
}

/// The middleware: 403 for a foreign Host/Origin, 503/429 past the limits (POSTs only: GET
/// streams are long-lived listeners and DELETE ends a session); on `/mcp`, every refusal is a
/// JSON-RPC error object.
pub(crate) async fn guard(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let on_mcp = request.uri().path().starts_with("/mcp");
    let response = admit(guard, request, next).await;
    if on_mcp {
        as_json_rpc_error(response).await
    } else {
        response
    }
}

/// Longest refusal text of rmcp's that is carried over into the JSON-RPC error.
const REFUSAL_TEXT_BYTES: usize = 4096;

/// rmcp refuses a request it will not read (wrong `Accept` 406, wrong `Content-Type` 415, an
/// unknown session 404, a bad `Mcp-Protocol-Version` 400, …) with a plain-text body; a client
/// reading JSON-RPC over HTTP (the TypeScript SDK's servers answer these as JSON-RPC errors)
/// gets the same status and text as a JSON-RPC error: -32001 for an unknown session (as on
/// `/message`), -32000 for the others.
async fn as_json_rpc_error(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/event-stream"));
    if !status.is_client_error() || is_json {
        return response;
    }
    let (_, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, REFUSAL_TEXT_BYTES).await {
        Ok(bytes) if !bytes.is_empty() => String::from_utf8_lossy(&bytes).into_owned(),
        _ => status.canonical_reason().unwrap_or("refused").to_owned(),
    };
    let code = if status == StatusCode::NOT_FOUND {
        -32001
    } else {
        -32000
    };
    rpc_error(status, code, &text)
}

async fn admit(guard: Arc<Guard>, request: Request, next: Next) -> Response {
    if let Err(why) = guard.origin.check(request.headers()) {
        tracing::debug!(why, "rejected HTTP request");
        return rpc_error(StatusCode::FORBIDDEN, -32000, &format!("forbidden: {why}"));
    }
    if request.method() == Method::DELETE {
        // rmcp answers a session's DELETE with 202; clients (the Python SDK) expect 200, and
        // the session is gone by then, so 200 is the truth.
        let mut response = next.run(request).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        return response;
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    // Read the body first (bounded): a rejected client's connection stays usable, and a body
    // rmcp cannot parse can be answered as JSON-RPC asks.
    let session = session_of(&request);
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, guard.max_body_bytes);
    let bytes = match tokio::time::timeout(guard.body_read_timeout, read).await {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                &format!("request body larger than {} bytes", guard.max_body_bytes),
            );
        }
        Err(_) => {
            tracing::debug!("request body not received in time");
            let mut response = rpc_error(
                StatusCode::REQUEST_TIMEOUT,
                -32000,
                &format!(
                    "request body not received within {} ms (`http.bodyReadTimeoutMs`)",
                    guard.body_read_timeout.as_millis()
                ),
            );
            // The rest of the body may still come: this connection cannot be reused.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
    };
    let permits = match guard.admit(session.as_deref()) {
        Ok(p) => p,
        Err(refusal) => return rpc_error(refusal.status, -32000, refusal.message),
    };
    let json_body = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    // rmcp answers a JSON body it cannot deserialize with 415 and plain text; JSON-RPC over
    // HTTP wants 400 with a parse error (-32700) or an invalid-request error (-32600).
    if json_body && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return if serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_err() {
            rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                "parse error: the body is not JSON",
            )
        } else {
            rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "invalid request: the body is not a JSON-RPC message MCP knows",
            )
        };
    }
    // A body of known length (a JSON answer) is complete: the work it reports is done, so the
    // permits can go now, and the response keeps its Content-Length instead of being re-chunked.
    if response.body().size_hint().exact().is_some() {
        drop(permits);
        return response;
    }
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        // The permits live as long as the body (an SSE stream) is being sent.
        let _held = &permits;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// A JSON-RPC error (id null: the request was never read) with an HTTP status.
pub(crate) fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}
