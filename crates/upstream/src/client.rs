//! The client side of one connection: what mcpflow tells the upstream about itself, and what
//! it does with the upstream's notifications.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

// Logging is deprecated in 2026-07-28 (SEP-2577), but the older servers we talk to still log.
#[expect(
    deprecated,
    reason = "servers on 2025-11-25 and older still send notifications/message"
)]
use rmcp::model::LoggingMessageNotificationParam;
// Sampling and roots are deprecated in 2026-07-28 (SEP-2577); 2025-11-25 servers still ask.
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationCapability, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, RootsCapabilities, SamplingCapability, ServerRequest,
    UrlElicitationCapability,
};
#[expect(
    deprecated,
    reason = "servers on 2025-11-25 and older still ask for sampling and roots"
)]
use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ListRootsRequest,
    ListRootsResult,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use tokio::sync::mpsc;

use crate::relay::{Relay, answer_as};
use crate::result::ToolInfo;

/// One `notifications/progress` an upstream sent about a call.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamProgress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where a call's progress goes.
pub type ProgressSink = mpsc::UnboundedSender<UpstreamProgress>;

/// The rmcp client puts its own progress token on every request: calls that want their
/// progress register that token here, and the notifications are routed back by it.
#[derive(Debug, Default)]
pub(crate) struct ProgressRoutes {
    routes: Mutex<HashMap<ProgressToken, ProgressSink>>,
}

impl ProgressRoutes {
    /// Routes `token`'s notifications to `sink` until the returned guard is dropped.
    pub fn register(self: &Arc<Self>, token: ProgressToken, sink: ProgressSink) -> Route {
        self.lock().insert(token.clone(), sink);
        Route {
            routes: self.clone(),
            token,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ProgressSink>> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) struct Route {
    routes: Arc<ProgressRoutes>,
    token: ProgressToken,
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.token);
    }
}

/// The version sent in `initialize`. rmcp's default, 2026-07-28, has no `initialize` at all and
/// most servers in the wild do not speak it yet; 2025-11-25 is the newest version with the
/// handshake. A server that only knows an older version answers with that one, and we use it.
pub(crate) const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// Handles what an upstream sends us unasked: notifications, and requests for the client of a
/// forwarded call (relayed to it, see [`crate::relay`]).
pub(crate) struct ClientEvents {
    server: Arc<str>,
    tools: Arc<ToolCache>,
    progress: Arc<ProgressRoutes>,
    relay: Arc<Relay>,
}

impl ClientEvents {
    pub fn new(
        server: Arc<str>,
        tools: Arc<ToolCache>,
        progress: Arc<ProgressRoutes>,
        relay: Arc<Relay>,
    ) -> ClientEvents {
        ClientEvents {
            server,
            tools,
            progress,
            relay,
        }
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

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
        let answer = self.relay.relay(&self.server, request, &context).await?;
        answer_as("roots/list", answer)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let sink = self.progress.lock().get(&params.progress_token).cloned();
        if let Some(sink) = sink {
            let _ = sink.send(UpstreamProgress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "upstream tool list changed");
        self.tools.invalidate();
        crate::changes::announce(&self.server);
    }

    #[expect(
        deprecated,
        reason = "servers on 2025-11-25 and older still send notifications/message"
    )]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        crate::changes::announce_log(&self.server, &params);
        tracing::debug!(
            target: "mcpflow_upstream::log",
            server = %self.server,
            level = ?params.level,
            logger = params.logger.as_deref().unwrap_or(""),
            "{}",
            params.data
        );
    }
}

/// The upstream's last `tools/list`, dropped when it announces a change.
#[derive(Debug, Default)]
pub(crate) struct ToolCache {
    state: Mutex<CacheState>,
}

#[derive(Debug, Default)]
struct CacheState {
    /// Bumped by every invalidation, so a listing that raced with one is not stored.
    generation: u64,
    tools: Option<Arc<Vec<ToolInfo>>>,
}

impl ToolCache {
    /// The cached tools, or the generation to hand back to [`ToolCache::store`].
    pub fn get(&self) -> Result<Arc<Vec<ToolInfo>>, u64> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.tools.clone().ok_or(state.generation)
    }

    pub fn store(&self, generation: u64, tools: Arc<Vec<ToolInfo>>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.generation == generation {
            state.tools = Some(tools);
        }
    }

    pub fn invalidate(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.generation += 1;
        state.tools = None;
    }
}
