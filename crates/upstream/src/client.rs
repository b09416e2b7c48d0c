//! The client side of one connection: what mcpflow tells the upstream about itself, and what
//! it answers when the upstream asks the client something (relayed to the caller of the
//! request it belongs to, see [`crate::relay`]). The upstream's notifications are handled
//! before rmcp sees them, in wire order (see [`crate::inbound`]).

use std::sync::Arc;

// Sampling and roots are deprecated in 2026-07-28 (SEP-2577); 2025-11-25 servers still ask.
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationCapability, FormElicitationCapability, Implementation, ProtocolVersion,
    RootsCapabilities, SamplingCapability, ServerRequest, UrlElicitationCapability,
};
#[expect(
    deprecated,
    reason = "servers on 2025-11-25 and older still ask for sampling and roots"
)]
use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ListRootsRequest,
    ListRootsResult, Root,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};

use crate::relay::{Relay, answer_as};

/// The version sent in `initialize`. rmcp's default, 2026-07-28, has no `initialize` at all and
/// most servers in the wild do not speak it yet; 2025-11-25 is the newest version with the
/// handshake. A server that only knows an older version answers with that one, and we use it.
pub(crate) const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// Answers what an upstream asks us: requests for the client of a forwarded call (relayed to
/// it, see [`crate::relay`]).
pub(crate) struct ClientEvents {
    server: Arc<str>,
    relay: Arc<Relay>,
}

impl ClientEvents {
    pub fn new(server: Arc<str>, relay: Arc<Relay>) -> ClientEvents {
        ClientEvents { server, relay }
    }
}

/// Everything a downstream client may be asked through us; whether the client of a given call
/// declared it is checked per request when it is relayed.
fn relayed_capabilities() -> ClientCapabilities {
    let mut sampling = SamplingCapability::default();
    sampling.tools = Some(Default::default());
    sampling.context = Some(Default::default());
    let mut roots = RootsCapabilities::default();
    roots.list_changed = Some(true);
    let mut capabilities = ClientCapabilities::default();
    capabilities.sampling = Some(sampling);
    capabilities.roots = Some(roots);
    capabilities.elicitation = Some(
        ElicitationCapability::new()
            .with_form(FormElicitationCapability::new())
            .with_url(UrlElicitationCapability::new()),
    );
    capabilities
}

#[expect(
    deprecated,
    reason = "sampling and roots are deprecated in 2026-07-28 only"
)]
impl ClientHandler for ClientEvents {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            relayed_capabilities(),
            Implementation::new("mcpflow", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(PROTOCOL_VERSION)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
        let answer = self.relay.relay(&self.server, request, &context).await?;
        answer_as("sampling/createMessage", answer)
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
        let answer = self.relay.relay(&self.server, request, &context).await?;
        answer_as("elicitation/create", answer)
    }

    /// The roots of the client whose call the request belongs to, when it has any; else
    /// mcpflow answers as a client itself, with the server's configured `roots` (none by
    /// default), so a server asking at its start (server-filesystem does) gets an answer.
    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        if !self.relay.client_has_roots(&context) {
            let roots = self.relay.own_roots().iter().map(Root::new).collect();
            return Ok(ListRootsResult::new(roots));
        }
        let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
        let answer = self.relay.relay(&self.server, request, &context).await?;
        answer_as("roots/list", answer)
    }
}
