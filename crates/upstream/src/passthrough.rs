//! Pass-through for the gateway: any client request forwarded to an upstream as is, and its
//! answer returned whole (every field, `_meta` included).
//!
//! Unlike the rest of the crate this speaks rmcp's types: a gateway must not lose what it does
//! not understand, so the request and the answer stay in MCP's own shape.

use std::sync::Arc;

use rmcp::model::{ClientRequest, RequestMetaObject, ServerResult, Tool};
use rmcp::service::PeerRequestOptions;

use super::Upstream;
use crate::client::ProgressSink;
use crate::connection::{ABANDONED, CancelOnDrop};
use crate::error::UpstreamError;
use crate::pool::UpstreamPool;
use crate::relay::Caller;

impl UpstreamPool {
    /// Sends `request` to `server` (starting it if needed) within its timeout and returns the
    /// answer whole. With a `progress` sink, the upstream's `notifications/progress` about this
    /// request go there. Dropping the future cancels the request upstream.
    pub async fn forward(
        &self,
        server: &str,
        request: ClientRequest,
        progress: Option<ProgressSink>,
    ) -> Result<ServerResult, UpstreamError> {
        self.upstream(server)?
            .forward(request, progress, None, None)
            .await
    }

    /// Like [`UpstreamPool::forward`] for a request of `caller`: what the upstream asks while
    /// serving it (`sampling/createMessage`, `elicitation/create`, `roots/list`) is relayed to
    /// `caller` (see [`crate::relay`]).
    pub async fn forward_for(
        &self,
        server: &str,
        request: ClientRequest,
        progress: Option<ProgressSink>,
        caller: Arc<dyn Caller>,
    ) -> Result<ServerResult, UpstreamError> {
        self.upstream(server)?
            .forward(request, progress, Some(caller), None)
            .await
    }

    /// Every tool `server` lists, all pages, with every field it sent (icons, `_meta`, …).
    /// Not cached: callers keep their own copy and refresh it on [`crate::list_changes`].
    pub async fn list_tools_full(&self, server: &str) -> Result<Vec<Tool>, UpstreamError> {
        let upstream = self.upstream(server)?;
        let connection = upstream.connection().await?;
        let peer = connection.peer().clone();
        let result = connection
            .request("tools/list", upstream.call_timeout, peer.list_all_tools())
            .await;
        upstream.note(&result);
        result
    }
}

impl Upstream {
    /// `meta`: `_meta` entries put on the request over rmcp's own (see `stateless.rs`).
    pub(super) async fn forward(
        &self,
        request: ClientRequest,
        progress: Option<ProgressSink>,
        caller: Option<Arc<dyn Caller>>,
        meta: Option<RequestMetaObject>,
    ) -> Result<ServerResult, UpstreamError> {
        let connection = self.connection().await?;
        let operation = request.method().to_string();
        let peer = connection.peer().clone();
        let routes = connection.progress_routes();
        // Counted before it is sent: the upstream may ask before we hear back from the send.
        let in_flight = connection.in_flight(caller, self.call_timeout);
        let call = async move {
            let options = match meta {
                Some(meta) => PeerRequestOptions::no_options().with_meta(meta),
                None => PeerRequestOptions::no_options(),
            };
            let handle = peer.send_request_with_option(request, options).await?;
            in_flight.sent_as(&handle.id);
            let _route = progress.map(|sink| routes.register(handle.progress_token.clone(), sink));
            let mut guard = CancelOnDrop::new(&peer, handle.id.clone(), ABANDONED);
            let response = handle.await_response().await;
            guard.disarm();
            // rmcp hands notifications to spawned tasks but a response straight to its caller:
            // let the progress and log lines sent before the answer reach their routes (still
            // registered here) before the caller answers its client.
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            response
        };
        let result = connection
            .request(&operation, self.call_timeout, call)
            .await;
        self.note(&result);
        result
    }
}
