//! [`LiveServer`]: what the transports serve, a [`GraphServer`] that can be replaced while
//! clients stay connected. Each request is answered by the server current when it arrived and
//! keeps it to its end, so a run in flight finishes on the graph it started with; a reload
//! swaps in the next one and tells every connected client `notifications/tools/list_changed`,
//! and the resources' and prompts' when proxied ones are served (on a 2025 session as
//! notifications, on a 2026-07-28 `subscriptions/listen` stream on it, as far as it asked).

use std::sync::{Arc, Mutex, OnceLock, RwLock};

use mcpflow_model::future::boxed;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, InitializeRequestParams, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerConfig, ServerNotification, SubscriptionFilter,
    Tool,
};
use rmcp::service::{
    MaybeSendFuture, NotificationContext, Peer, RequestContext, SubscriptionContext,
};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio::sync::watch;

use crate::audit::Audit;
use crate::observe::Observation;
use crate::server::GraphServer;
use mcpflow_telemetry::metrics::ToolKind;

/// Put on an `initialize` request's extensions by a transport that wants the peer rmcp makes
/// for the session: [`LiveServer`]'s `initialize` leaves the peer in it. The Streamable HTTP
/// sessions run their `tools/call`s with it, beside rmcp's serve loop rather than through it.
#[derive(Clone, Default)]
pub(crate) struct PeerSlot(pub(crate) Arc<OnceLock<Peer<RoleServer>>>);

/// A [`GraphServer`] that [`LiveServer::replace`] swaps without dropping a connection. Cheap
/// to clone; every clone serves the same current server.
#[derive(Clone)]
pub struct LiveServer {
    shared: Arc<Shared>,
}

struct Shared {
    current: RwLock<GraphServer>,
    /// Whether the tool list can change by a reload: declared as `tools.listChanged`.
    reloads: bool,
    /// Clients of 2025 sessions, told of each reload.
    clients: Mutex<Vec<Peer<RoleServer>>>,
    /// Counts replacements; `subscriptions/listen` streams follow it.
    generation: watch::Sender<u64>,
    /// The audit log, kept across replacements: every `tools/call` leaves a line in it.
    audit: OnceLock<Audit>,
}

impl From<GraphServer> for LiveServer {
    fn from(server: GraphServer) -> Self {
        LiveServer::new(server, false)
    }
}

impl LiveServer {
    /// Serves `server`; with `reloads`, clients are told the tool list may change (it will,
    /// on [`LiveServer::replace`]).
    pub fn new(server: GraphServer, reloads: bool) -> Self {
        LiveServer {
            shared: Arc::new(Shared {
                current: RwLock::new(server),
                reloads,
                clients: Mutex::new(Vec::new()),
                generation: watch::Sender::new(0),
                audit: OnceLock::new(),
            }),
        }
    }

    /// Keeps `audit` from now on: every `tools/call` (over any transport) and every call
    /// access control refuses (on this server's listeners) leaves a line. Set once; a second
    /// audit is refused and returned.
    pub fn set_audit(&self, audit: Audit) -> Result<(), Audit> {
        self.shared.audit.set(audit)
    }

    /// The audit log, if one is kept.
    pub fn audit(&self) -> Option<&Audit> {
        self.shared.audit.get()
    }

    /// The server answering requests that arrive now.
    pub fn current(&self) -> GraphServer {
        self.shared
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Serves `next` from now on: requests in flight finish on the server they started on,
    /// and every connected client hears that the tool list changed. Returns the server
    /// replaced.
    pub async fn replace(&self, next: GraphServer) -> GraphServer {
        let clients: Vec<Peer<RoleServer>> = {
            let mut clients = lock(&self.shared.clients);
            clients.retain(|p| !p.is_transport_closed());
            clients.clone()
        };
        for peer in &clients {
            next.gateway().register_client(peer.clone());
        }
        let previous = std::mem::replace(
            &mut *self
                .shared
                .current
                .write()
                .unwrap_or_else(|e| e.into_inner()),
            next,
        );
        self.shared.generation.send_modify(|g| *g += 1);
        // Proxied resources and prompts may have changed with the upstreams: announced where
        // either config passes them (what a client saw at its initialize).
        let lists = ContentLists::of(&previous).or(ContentLists::of(&self.current()));
        for peer in clients {
            // A client that went away meanwhile is dropped at the next registration.
            let _ = peer.notify_tool_list_changed().await;
            if lists.resources {
                let _ = peer.notify_resource_list_changed().await;
            }
            if lists.prompts {
                let _ = peer.notify_prompt_list_changed().await;
            }
        }
        previous
    }

    /// Streams of 2026-07-28 clients: a tool list change per replacement, until the client
    /// ends the stream.
    async fn follow_replacements(&self, context: &SubscriptionContext) {
        let mut generations = self.shared.generation.subscribe();
        while generations.changed().await.is_ok() {
            if context.accepted().tools_list_changed != Some(true) {
                continue;
            }
            let changed = ServerNotification::ToolListChangedNotification(Default::default());
            if context.sink().send(changed).await.is_err() {
                return;
            }
            let accepted = context.accepted();
            let mut more = Vec::new();
            if accepted.resources_list_changed == Some(true) {
                more.push(ServerNotification::ResourceListChangedNotification(
                    Default::default(),
                ));
            }
            if accepted.prompts_list_changed == Some(true) {
                more.push(ServerNotification::PromptListChangedNotification(
                    Default::default(),
                ));
            }
            for changed in more {
                if context.sink().send(changed).await.is_err() {
                    return;
                }
            }
        }
        std::future::pending::<()>().await;
    }
}

/// Which of the proxied lists besides tools a server passes, so a reload announces them.
#[derive(Clone, Copy)]
struct ContentLists {
    resources: bool,
    prompts: bool,
}

impl ContentLists {
    fn of(server: &GraphServer) -> ContentLists {
        let caps = server.gateway().capabilities();
        ContentLists {
            resources: caps.resources.is_some(),
            prompts: caps.prompts.is_some(),
        }
    }

    fn or(self, other: ContentLists) -> ContentLists {
        ContentLists {
            resources: self.resources || other.resources,
            prompts: self.prompts || other.prompts,
        }
    }
}

impl LiveServer {
    /// A `tools/call`, counted, traced and audited around the current server's answer.
    async fn observed_call(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let observed = Observation::start(
            "tools/call",
            Some(&request.name),
            request.arguments.as_ref(),
            &context,
        );
        let server = self.current();
        let kind = |tool: &str| {
            if server.authoring().is_some_and(|a| a.handles(tool)) {
                ToolKind::Authoring
            } else if server.owns(tool) {
                ToolKind::Graph
            } else {
                ToolKind::Proxied
            }
        };
        let audited = self.audit().map(|audit| {
            let principal = crate::caller::principal(&context);
            let builtin = server.authoring().is_some_and(|a| a.handles(&request.name));
            let hidden = !crate::caller::sees(principal.as_ref(), &request.name, builtin);
            crate::audit::Call::start(audit, &mut context, principal, &request.name, hidden)
        });
        // Pinned here and lent: passed by value, the call's future was kept twice in
        // `around`'s (the argument and the awaited copy).
        let call = std::pin::pin!(server.call_tool(request, context));
        let answer = Observation::around(observed, call, kind).await;
        if let Some(call) = audited {
            call.end(&answer);
        }
        answer
    }
}

// Every method the GraphServer answers is passed to the one current when the request arrived.
// Each request's future is built in a box of its own (`boxed`): rmcp spawns a task per request
// around `handle_request`, whose future holds the largest method's inline (a call's hooks, run
// or upstream call: kilobytes), and tokio copies a spawned future in whole and writes its
// answer over it. Boxed, every method's share of it is one pointer.
impl ServerHandler for LiveServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = self.current().get_info();
        if self.shared.reloads {
            let tools = info.capabilities.tools.get_or_insert_with(Default::default);
            tools.list_changed = Some(true);
        }
        info
    }

    fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, McpError>> + MaybeSendFuture + '_ {
        boxed(move || async move {
            let observed = Observation::start("tools/list", None, None, &context);
            Observation::around(
                observed,
                self.current().list_tools(request, context),
                |_| ToolKind::Graph,
            )
            .await
        })
    }

    fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<InitializeResult, McpError>> + MaybeSendFuture + '_ {
        boxed(move || async move {
            // rmcp's own answer (the negotiated version, this server's info), counted.
            let observed = Observation::start("initialize", None, None, &context);
            context.peer.set_peer_info(request.clone());
            if let Some(slot) = context.extensions.get::<PeerSlot>() {
                let _ = slot.0.set(context.peer.clone());
            }
            let answer = std::future::ready(self.negotiate_initialize(&request));
            Observation::around(observed, answer, |_| ToolKind::Graph).await
        })
    }

    fn ping(
        &self,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        boxed(move || async move {
            let observed = Observation::start("ping", None, None, &context);
            Observation::around(observed, std::future::ready(Ok(())), |_| ToolKind::Graph).await
        })
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.current().get_tool(name)
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + MaybeSendFuture + '_ {
        boxed(move || self.observed_call(request, context))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.shared.reloads {
            let mut clients = lock(&self.shared.clients);
            clients.retain(|p| !p.is_transport_closed());
            clients.push(context.peer.clone());
        }
        self.current().on_initialized(context).await
    }

    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<rmcp::model::ListResourcesResult, McpError>> + MaybeSendFuture + '_
    {
        boxed(move || async move {
            let observed = Observation::start("resources/list", None, None, &context);
            Observation::around(
                observed,
                self.current().list_resources(request, context),
                |_| ToolKind::Graph,
            )
            .await
        })
    }

    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<rmcp::model::ListResourceTemplatesResult, McpError>>
    + MaybeSendFuture
    + '_ {
        boxed(move || async move {
            let observed = Observation::start("resources/templates/list", None, None, &context);
            Observation::around(
                observed,
                self.current().list_resource_templates(request, context),
                |_| ToolKind::Graph,
            )
            .await
        })
    }

    fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<rmcp::model::ReadResourceResponse, McpError>> + MaybeSendFuture + '_
    {
        boxed(move || async move {
            let observed = Observation::start("resources/read", None, None, &context);
            Observation::around(
                observed,
                self.current().read_resource(request, context),
                |_| ToolKind::Graph,
            )
            .await
        })
    }

    fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<rmcp::model::CompleteResult, McpError>> + MaybeSendFuture + '_
    {
        boxed(move || async move {
            let observed = Observation::start("completion/complete", None, None, &context);
            Observation::around(observed, self.current().complete(request, context), |_| {
                ToolKind::Graph
            })
            .await
        })
    }

    #[expect(deprecated, reason = "clients on 2025-11-25 still set a log level")]
    fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        boxed(move || async move {
            let observed = Observation::start("logging/setLevel", None, None, &context);
            Observation::around(observed, self.current().set_level(request, context), |_| {
                ToolKind::Graph
            })
            .await
        })
    }

    #[expect(deprecated, reason = "2025-11-25 clients still subscribe to resources")]
    fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        boxed(move || async move {
            let observed = Observation::start("resources/subscribe", None, None, &context);
            Observation::around(observed, self.current().subscribe(request, context), |_| {
                ToolKind::Graph
            })
            .await
        })
    }

    #[expect(deprecated, reason = "2025-11-25 clients still subscribe to resources")]
    fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        boxed(move || async move {
            let observed = Observation::start("resources/unsubscribe", None, None, &context);
            Observation::around(
                observed,
                self.current().unsubscribe(request, context),
                |_| ToolKind::Graph,
            )
            .await
        })
    }

    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<rmcp::model::ListPromptsResult, McpError>> + MaybeSendFuture + '_
    {
        boxed(move || async move {
            let observed = Observation::start("prompts/list", None, None, &context);
            Observation::around(
                observed,
                self.current().list_prompts(request, context),
                |_| ToolKind::Graph,
            )
            .await
        })
    }

    fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<rmcp::model::GetPromptResponse, McpError>> + MaybeSendFuture + '_
    {
        boxed(move || async move {
            let observed = Observation::start("prompts/get", None, None, &context);
            Observation::around(
                observed,
                self.current().get_prompt(request, context),
                |_| ToolKind::Graph,
            )
            .await
        })
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let proxied = self.current().accepted_subscription_filter(requested);
        if !self.shared.reloads {
            return proxied;
        }
        let mut accepted = proxied.unwrap_or_default();
        accepted.tools_list_changed = requested.tools_list_changed;
        Some(accepted)
    }

    fn listen(
        &self,
        context: SubscriptionContext,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        boxed(move || async move {
            let current = self.current();
            tokio::select! {
                result = current.gateway().listen(&context) => result,
                () = self.follow_replacements(&context) => Ok(()),
            }
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
