//! The HTTP listener: Streamable HTTP at `/mcp` (both spec eras, negotiated per request by
//! rmcp), legacy HTTP+SSE at `/sse` + `/message`, `/healthz` and `/readyz`, on one port.
//!
//! rmcp's `StreamableHttpService` speaks the protocol (requests, SSE framing, the 2026-07-28
//! stateless requests, body limits) and runs each session's MCP service; the sessions
//! themselves are ours (`sessions`: routing to SSE streams, resumption with `Last-Event-ID`,
//! the cap and the idle timeout), and so are the `tools/call`s whose every check rmcp makes
//! passes as written (`calls`: read in one pass, no service started per stateless request).
//! This module binds, guards every route (`guard`), bounds the
//! connections (`conns`: header deadline, a cap below the open-file limit), routes and shuts
//! down gracefully. The run API
//! (`mcpflow_api`, under `/api`) is mounted behind the same guard when the options carry it,
//! and with it the REST face (`/rest/v1`), which reaches the tools through `/mcp`'s own
//! service (`rest`).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use mcpflow_auth::Auth;
use mcpflow_config::http::HttpConfig;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

mod calls;
mod conns;
mod guard;
mod origin;
mod rest;
mod sessions;
mod sse;

use crate::error::ServerError;
use crate::live::LiveServer;
use guard::{Guard, guard};
use sessions::Sessions;
use sse::LegacySse;

/// Answers whether the server can do its job (e.g. its upstreams answer); `Err` says why not.
/// `Ok` with a note to show under "ready" (empty for none), or why the server is not ready.
pub type ReadinessCheck =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>> + Send + Sync>;

/// How the HTTP listener is exposed and bounded.
#[derive(Clone, Default)]
pub struct HttpOptions {
    /// `Host` values to accept besides the loopback names (`localhost`, `127.0.0.1`, `::1`),
    /// e.g. the public name behind a load balancer; `*` accepts any. Anything else gets 403,
    /// which stops DNS-rebinding attacks on a server bound to a local port.
    pub allowed_hosts: Vec<String>,
    /// Browser origins to accept besides those on an accepted host; `*` accepts any.
    pub allowed_origins: Vec<String>,
    pub limits: HttpLimits,
    /// What `/readyz` asks besides "not shutting down"; none means always ready.
    pub readiness: Option<ReadinessCheck>,
    /// The run API (`/api/...`), mounted behind the same guard as `/mcp`.
    pub api: Option<mcpflow_api::Api>,
    /// Access control (the config's `auth:`); none serves everyone, as [`Auth::open`] does.
    /// Every route passes it, and each must be declared in `mcpflow_auth`'s endpoint table.
    pub auth: Option<Arc<Auth>>,
}

/// Bounds on what clients can make the server hold.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    pub max_body_bytes: usize,
    pub max_sessions: usize,
    pub session_idle_timeout: Duration,
    pub max_concurrent_requests: usize,
    pub max_concurrent_requests_per_session: usize,
    /// Most open connections; lowered at start to the open-file limit less the descriptors
    /// kept for upstreams and the store.
    pub max_connections: usize,
    /// A connection whose request headers are not complete this long after it opened (or
    /// after its previous response) is closed: slow or idle clients hold no descriptor.
    pub header_read_timeout: Duration,
    /// A request body not received in full this long after its headers is answered 408.
    pub body_read_timeout: Duration,
    /// After the shutdown signal, how long `/readyz` answers 503 while everything else is
    /// still served, so that a load balancer takes the server out before it stops accepting.
    pub drain_delay: Duration,
    /// After that, how long requests in flight may take before their connections are closed.
    pub shutdown_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_body_bytes: 4 * 1024 * 1024,
            max_sessions: 2_000,
            session_idle_timeout: Duration::from_secs(300),
            max_concurrent_requests: 1024,
            max_concurrent_requests_per_session: 64,
            max_connections: 4096,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            drain_delay: Duration::ZERO,
            shutdown_timeout: Duration::from_secs(30),
        }
    }
}

impl HttpOptions {
    /// The config's `http:` section over the defaults.
    pub fn from_config(config: Option<&HttpConfig>) -> Self {
        let mut options = HttpOptions::default();
        let Some(c) = config else {
            return options;
        };
        let size = |v: Option<u64>, default: usize| {
            v.map_or(default, |v| usize::try_from(v).unwrap_or(usize::MAX))
        };
        let l = &mut options.limits;
        l.max_body_bytes = size(c.max_body_bytes, l.max_body_bytes);
        l.max_sessions = size(c.max_sessions, l.max_sessions);
        l.max_concurrent_requests = size(c.max_concurrent_requests, l.max_concurrent_requests);
        l.max_concurrent_requests_per_session = size(
            c.max_concurrent_requests_per_session,
            l.max_concurrent_requests_per_session,
        );
        l.max_connections = size(c.max_connections, l.max_connections);
        let ms = |v: Option<u64>, default: Duration| v.map_or(default, Duration::from_millis);
        l.session_idle_timeout = ms(c.session_idle_timeout_ms, l.session_idle_timeout);
        l.header_read_timeout = ms(c.header_read_timeout_ms, l.header_read_timeout);
        l.body_read_timeout = ms(c.body_read_timeout_ms, l.body_read_timeout);
        l.drain_delay = ms(c.drain_delay_ms, l.drain_delay);
        l.shutdown_timeout = ms(c.shutdown_timeout_ms, l.shutdown_timeout);
        options.allowed_hosts = c.allowed_hosts.clone();
        options.allowed_origins = c.allowed_origins.clone();
        options
    }
}

/// 128 random bits in hex: unguessable, and visible ASCII as the spec asks of session ids.
pub(crate) fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: fall back to a process-unique value rather than fail the client.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = (t ^ (u128::from(n) << 64) ^ u128::from(std::process::id())).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the server can do its job, for `/readyz` and the REST face's health: not while it
/// shuts down, else what `readiness` says.
async fn ready(stopping: bool, readiness: Option<ReadinessCheck>) -> Result<String, String> {
    if stopping {
        return Err("shutting down".to_owned());
    }
    match readiness {
        None => Ok(String::new()),
        Some(check) => check().await,
    }
}

/// A bound, not yet serving, HTTP listener: bind first so the caller can print the address
/// (port 0 picks a free one).
pub struct HttpListener {
    listener: tokio::net::TcpListener,
}

impl HttpListener {
    pub async fn bind(addr: SocketAddr) -> Result<Self, ServerError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| ServerError::Transport(format!("cannot listen on {addr}: {e}")))?;
        Ok(HttpListener { listener })
    }

    pub fn local_addr(&self) -> Result<SocketAddr, ServerError> {
        self.listener
            .local_addr()
            .map_err(|e| ServerError::Transport(e.to_string()))
    }

    /// Serves until `shutdown` resolves, then answers `/readyz` with 503 for the drain delay,
    /// stops accepting, ends the MCP sessions and lets requests in flight finish within the
    /// shutdown timeout.
    pub async fn serve(
        self,
        server: impl Into<LiveServer>,
        options: HttpOptions,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let server: LiveServer = server.into();
        let audit = server.audit().cloned();
        let stopping = Arc::new(AtomicBool::new(false));
        let sessions = CancellationToken::new();
        let limits = options.limits.clone();
        let mut config = StreamableHttpServerConfig::default()
            .with_max_request_body_bytes(limits.max_body_bytes)
            // For 2026-07-28 (stateless) requests: a plain JSON answer when the call streams
            // nothing, instead of an SSE stream of one event.
            .with_json_response(true)
            .with_cancellation_token(sessions.child_token());
        // The guard in front checks Host and Origin for every route; rmcp checks Host again on
        // /mcp, with the same list.
        config = if options.allowed_hosts.iter().any(|h| h == "*") {
            config.disable_allowed_hosts()
        } else {
            let mut hosts: Vec<String> = origin::LOOPBACK_HOSTS
                .iter()
                .map(|h| (*h).to_owned())
                .collect();
            hosts.extend(options.allowed_hosts.iter().cloned());
            config.with_allowed_hosts(hosts)
        };
        let mcp_server = server.clone();
        let bounded = Sessions::new(
            limits.max_sessions,
            limits.session_idle_timeout,
            config.sse_retry,
        );
        let mcp = calls::Behind::new(StreamableHttpService::new(
            move || Ok(mcp_server.clone()),
            bounded.clone(),
            config,
        ));
        // The `tools/call`s rmcp would accept as written are served in front of it (`calls`):
        // read in one pass, and without a service started per stateless request.
        let calls = calls::Calls::new(
            server.clone(),
            bounded.clone(),
            limits.max_body_bytes,
            sessions.child_token(),
        );
        // The REST face sends its stateless MCP requests the way `/mcp` serves them (the
        // `calls` layer included), behind the guard and access control its own route passed.
        let rest = options.api.is_some().then(|| rest::Bridge {
            mcp: Router::new().nest_service("/mcp", mcp.clone()).layer(
                axum::middleware::from_fn_with_state(calls.clone(), calls::serve),
            ),
            live: server.clone(),
            readiness: options.readiness.clone(),
            stopping: stopping.clone(),
        });
        let legacy = Arc::new(LegacySse::new(
            server,
            limits.max_sessions,
            limits.max_body_bytes,
            sessions.child_token(),
        ));
        let guard_state = Arc::new(Guard::new(&options));
        let streamable = Router::new()
            .nest_service("/mcp", mcp)
            .layer(axum::middleware::from_fn_with_state(calls, calls::serve))
            .layer(axum::middleware::from_fn_with_state(
                bounded,
                sessions::owned_only,
            ));
        let mut protocol = streamable
            .route("/sse", get(sse::open))
            .route("/message", post(sse::post))
            .with_state(legacy);
        if let Some(api) = &options.api {
            protocol = protocol.merge(
                api.router()
                    .layer(axum::middleware::from_fn(crate::caller::for_api)),
            );
        }
        if let Some(rest) = rest {
            protocol = protocol.merge(mcpflow_api::rest::router(Arc::new(rest)));
        }
        let stopping_now = stopping.clone();
        let readiness = options.readiness.clone();
        let app = protocol.route("/healthz", get(|| async { "ok\n" })).route(
            "/readyz",
            get(move || {
                let answer = ready(stopping_now.load(Ordering::Relaxed), readiness.clone());
                async move {
                    match answer.await {
                        Ok(note) if note.is_empty() => (StatusCode::OK, "ready\n".to_owned()),
                        Ok(note) => (StatusCode::OK, format!("ready\n{note}\n")),
                        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
                    }
                }
            }),
        );
        let auth = options
            .auth
            .clone()
            .unwrap_or_else(|| Arc::new(Auth::open()));
        let app = if auth.is_enforced() {
            app.merge(mcpflow_auth::http::metadata_router(auth.clone()))
        } else {
            app
        };
        // Access control inside the guard: the body it reads is already bounded.
        let app = app.layer(axum::middleware::from_fn_with_state(
            auth,
            mcpflow_auth::http::enforce,
        ));
        // Outside access control, so that the calls it refuses leave their audit lines.
        let app = match audit {
            Some(audit) => app.layer(axum::middleware::from_fn_with_state(
                audit,
                crate::audit::refusals,
            )),
            None => app,
        };
        // Every route behind the guard, the probes too: a DNS-rebinding page must not read
        // even whether the server is up.
        let in_flight = guard_state.clone();
        let app = app.layer(axum::middleware::from_fn_with_state(guard_state, guard));
        let stop = CancellationToken::new();
        let stop_accepting = stop.clone();
        let (drain, patience) = (limits.drain_delay, limits.shutdown_timeout);
        tokio::spawn(async move {
            shutdown.await;
            // Unready first, still serving: the balancer's health checks see the 503 and send
            // new requests elsewhere before the listener closes under them.
            stopping.store(true, Ordering::Relaxed);
            if !drain.is_zero() {
                tracing::info!(
                    "draining: /readyz answers 503; still serving for {} ms",
                    drain.as_millis()
                );
                tokio::time::sleep(drain).await;
            }
            stop_accepting.cancel();
            // The sessions end only once the calls in flight are answered: ending them cancels
            // their handlers (rmcp's token), stateless calls included.
            if tokio::time::timeout(patience, in_flight.settled())
                .await
                .is_err()
            {
                tracing::warn!(
                    "requests still in flight {} ms after the listener closed: cancelling them",
                    patience.as_millis()
                );
            }
            sessions.cancel();
        });
        let settings = conns::Settings {
            max_connections: conns::connection_cap(limits.max_connections),
            header_read_timeout: limits.header_read_timeout,
            // The calls' own deadline, and a moment for the streams ended after it to close.
            shutdown_timeout: patience + Duration::from_secs(2),
        };
        conns::serve(self.listener, app, settings, stop).await;
        Ok(())
    }
}
