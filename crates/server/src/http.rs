//! Streamable HTTP at `/mcp`, with `/healthz` and `/readyz`, on one listener.
//!
//! rmcp's `StreamableHttpService` speaks the protocol (sessions, SSE streams, Host checks
//! against DNS rebinding, body limits); this module binds, routes and shuts down gracefully.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::error::ServerError;
use crate::handler::GraphServer;

/// How the HTTP listener is exposed.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Extra `Host` values to accept besides the loopback names (`localhost`, `127.0.0.1`,
    /// `::1`), e.g. the public name behind a load balancer. Anything else gets 403, which stops
    /// DNS-rebinding attacks on a server bound to a local port.
    pub allowed_hosts: Vec<String>,
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

    /// Serves until `shutdown` resolves, then stops accepting, ends the MCP sessions and lets
    /// requests in flight finish.
    pub async fn serve(
        self,
        server: GraphServer,
        options: HttpOptions,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let stopping = Arc::new(AtomicBool::new(false));
        let sessions = CancellationToken::new();
        let mut hosts = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ];
        hosts.extend(options.allowed_hosts);
        let mut config = StreamableHttpServerConfig::default().with_allowed_hosts(hosts);
        config.cancellation_token = sessions.child_token();
        let mcp = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let ready = stopping.clone();
        let app = Router::new()
            .nest_service("/mcp", mcp)
            .route("/healthz", get(|| async { "ok\n" }))
            .route(
                "/readyz",
                get(move || {
                    let stopping = ready.load(Ordering::Relaxed);
                    async move {
                        if stopping {
                            (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
                        } else {
                            (StatusCode::OK, "ready\n")
                        }
                    }
                }),
            );
        let graceful = async move {
            shutdown.await;
            stopping.store(true, Ordering::Relaxed);
            sessions.cancel();
        };
        axum::serve(self.listener, app)
            .with_graceful_shutdown(graceful)
            .await
            .map_err(|e| ServerError::Transport(e.to_string()))
    }
}
