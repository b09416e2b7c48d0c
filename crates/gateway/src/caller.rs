//! The client of a forwarded call, as its upstream sees it: what the upstream asks while it
//! serves the call (`sampling/createMessage`, `elicitation/create`, `roots/list`) goes to this
//! client, on the call's own HTTP response stream (see `mcpflow_upstream::Caller`).

use std::any::Any;
use std::sync::Arc;

use futures::future::BoxFuture;
use mcpflow_upstream::passthrough::{Caller, CancelOnDrop};
use rmcp::model::{
    ClientCapabilities, ClientResult, ErrorCode, GetExtensions, RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, PeerRequestOptions, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServiceError};

pub(crate) struct CallingClient {
    peer: Peer<RoleServer>,
    /// The client's request being forwarded: rmcp sends what we ask on its response stream.
    call: RequestId,
    capabilities: Option<ClientCapabilities>,
    /// Kept alive so its address names the client (see [`Caller::client`]): the handshake
    /// info rmcp stores once per session, or a value of this call alone when there is none.
    identity: Arc<dyn Any + Send + Sync>,
}

impl CallingClient {
    pub(crate) fn new(context: &RequestContext<RoleServer>) -> CallingClient {
        let identity: Arc<dyn Any + Send + Sync> = match context.peer.peer_info() {
            Some(info) => info,
            None => Arc::new(()),
        };
        CallingClient {
            peer: context.peer.clone(),
            call: context.id.clone(),
            capabilities: context.client_capabilities(),
            identity,
        }
    }
}

impl Caller for CallingClient {
    fn client(&self) -> usize {
        Arc::as_ptr(&self.identity).cast::<()>() as usize
    }

    fn capabilities(&self) -> Option<ClientCapabilities> {
        self.capabilities.clone()
    }

    fn ask(
        &self,
        mut request: ServerRequest,
    ) -> BoxFuture<'static, Result<ClientResult, McpError>> {
        request
            .extensions_mut()
            .insert(OriginatingRequestId(self.call.clone()));
        let peer = self.peer.clone();
        Box::pin(async move {
            let handle = peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await
                .map_err(client_failure)?;
            let mut guard = CancelOnDrop::new(
                &peer,
                handle.id.clone(),
                "the upstream no longer waits for this answer",
            );
            let answer = handle.await_response().await;
            guard.disarm();
            answer.map_err(client_failure)
        })
    }
}

/// The client's own refusal goes back as is; anything else says what happened to the request.
fn client_failure(error: ServiceError) -> McpError {
    match error {
        ServiceError::McpError(error) => error,
        other => McpError::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the client could not be asked: {other}"),
            None,
        ),
    }
}
