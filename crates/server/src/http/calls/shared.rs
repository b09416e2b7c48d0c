//! The one MCP service behind every stateless request served here.
//!
//! A handler's context needs a `Peer`, and rmcp makes peers only by starting a service. One
//! service is started for the listener's life, with the peer info rmcp gives each stateless
//! request (its protocol version, no client info: a 2026-07-28 client's lives in each request's
//! `_meta`), and its peer is lent to every request's context. Nothing reaches that service:
//! requests go to the handler directly; what a handler sends for a request goes to the
//! request's `ReplyTo`; the peer refuses server-to-client requests on this protocol itself.

use std::convert::Infallible;

use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ClientJsonRpcMessage, Implementation, InitializeRequestParams,
    ProtocolVersion, ServerJsonRpcMessage,
};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::Transport;
use tokio_util::sync::CancellationToken;

use crate::live::LiveServer;

pub(super) struct Shared {
    peer: Peer<RoleServer>,
    /// Dropped with the listener: the service ends.
    _service: RunningService<RoleServer, LiveServer>,
}

impl Shared {
    pub(super) fn start(server: LiveServer, shutdown: CancellationToken) -> Shared {
        let info =
            InitializeRequestParams::new(ClientCapabilities::default(), Implementation::default())
                .with_protocol_version(ProtocolVersion::V_2026_07_28);
        let service = rmcp::service::serve_directly(server, Quiet { shutdown }, Some(info));
        Shared {
            peer: service.peer().clone(),
            _service: service,
        }
    }

    pub(super) fn peer(&self) -> Peer<RoleServer> {
        self.peer.clone()
    }
}

/// The shared service's transport: receives nothing until shutdown; what it is given to send
/// belongs to no request (a notification a handler sent through its peer rather than its
/// request's `ReplyTo`) and is dropped, said in the debug log.
struct Quiet {
    shutdown: CancellationToken,
}

impl Transport<RoleServer> for Quiet {
    type Error = Infallible;

    fn send(
        &mut self,
        message: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Infallible>> + Send + 'static {
        tracing::debug!(
            ?message,
            "a message for no stateless request in particular: not delivered"
        );
        std::future::ready(Ok(()))
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        let shutdown = self.shutdown.clone();
        async move {
            shutdown.cancelled().await;
            None
        }
    }

    async fn close(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}
