//! The gateway: upstream tools (and resources and prompts) listed next to the graph tools and
//! forwarded transparently, with the configured names, filters, overrides and hooks.
//!
//! Each upstream's list is the pool's one cached list (fetched on first need, dropped when the
//! upstream says it changed, `notifications/tools/list_changed`, which is then re-announced to
//! our clients); the renamed, filtered view of it here is rebuilt when the pool's list is
//! another one. An
//! upstream that cannot be reached drops out of the list (`failureMode: hide`) or keeps its last
//! known tools whose calls then fail (`fail`); the others are untouched either way.

mod caller;
mod content;
mod expose;
mod stateless;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use mcpflow_config::Config;
use mcpflow_config::proxy::{FailureMode, HookMethod, HookPhase, ProxiedUpstream, ProxyConfig};
use mcpflow_upstream::passthrough::SendOptions;
use mcpflow_upstream::{UpstreamError, UpstreamLog, UpstreamPool, UpstreamProgress};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest,
    ContentBlock, ProgressNotificationParam, ServerResult, Tool,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::error::ServerError;
use crate::hooks::{Hooks, Target, Verdict};
use expose::Exposed;
pub(crate) use stateless::Era;

/// The pass-through side of the server. Cheap to share; one per served config.
pub struct Proxy {
    pool: UpstreamPool,
    config: ProxyConfig,
    hooks: Hooks,
    /// Names of this config's graph tools: they win over any proxied tool of the same name.
    graph_tools: HashSet<String>,
    state: Mutex<State>,
    /// Clients to tell when a proxied list changes.
    clients: Mutex<Vec<Peer<RoleServer>>>,
    content: content::Routes,
    /// Calls in flight per upstream: an upstream's log lines are relayed to a caller only
    /// while its call is the only one there, so no client reads another client's logs.
    in_flight: Mutex<HashMap<Arc<str>, usize>>,
}

#[derive(Default)]
struct State {
    listings: HashMap<Arc<str>, Listing>,
    /// Listed name → tool, over every upstream's last good listing.
    by_name: HashMap<String, Arc<Exposed>>,
}

#[derive(Default)]
struct Listing {
    /// The pool's list `tools` was made from: while the pool still holds this one, the view
    /// is current.
    source: Option<Arc<Vec<Tool>>>,
    /// The view of the last good list, kept while the upstream is down.
    tools: Option<Arc<Vec<Arc<Exposed>>>>,
    /// Why the last listing failed, while it keeps failing.
    down: Option<String>,
}

impl Proxy {
    /// `None` when the config proxies nothing and has no hooks.
    pub(crate) fn new(
        config: &Config,
        pool: UpstreamPool,
        hooks: Hooks,
    ) -> Result<Option<Arc<Proxy>>, ServerError> {
        let Some(proxy) = config.proxy.clone() else {
            return Ok(None);
        };
        let changes = pool.list_changes();
        let proxy = Arc::new(Proxy {
            pool,
            config: proxy,
            hooks,
            graph_tools: config.tools.iter().map(|t| t.name.clone()).collect(),
            state: Mutex::new(State::default()),
            clients: Mutex::new(Vec::new()),
            content: content::Routes::default(),
            in_flight: Mutex::new(HashMap::new()),
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(watch_changes(Arc::downgrade(&proxy), changes));
        }
        Ok(Some(proxy))
    }

    pub fn upstreams(&self) -> impl Iterator<Item = (&str, &ProxiedUpstream)> {
        self.config.upstreams.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Lists every upstream now and reports names taken twice (by two upstream tools, or by an
    /// upstream tool and a graph tool), naming both owners. Upstreams that cannot be reached are
    /// only logged: they may come up later.
    pub async fn check_names(&self) -> Result<(), ServerError> {
        let listings = self.list_all().await;
        let mut owners: HashMap<&str, String> = self
            .graph_tools
            .iter()
            .map(|n| (n.as_str(), format!("graph tool `{n}`")))
            .collect();
        let mut clashes = Vec::new();
        for (server, listing) in &listings {
            match listing {
                Ok(tools) => {
                    for t in tools.iter() {
                        let owner = format!("tool `{}` of upstream `{server}`", t.original);
                        match owners.get(&*t.tool.name) {
                            Some(first) => clashes.push(format!(
                                "tool name `{}` is taken by both {first} and {owner}",
                                t.tool.name
                            )),
                            None => {
                                owners.insert(&t.tool.name, owner);
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(server = %server, error = %e, "proxied upstream not reachable at start")
                }
            }
        }
        if clashes.is_empty() {
            Ok(())
        } else {
            Err(ServerError::Proxy(format!(
                "{}; give the upstreams a prefix (`naming: prefix`) or rename the tools",
                clashes.join("; ")
            )))
        }
    }

    /// Remembers the client so it hears about list changes.
    pub fn register_client(&self, peer: Peer<RoleServer>) {
        let mut clients = lock(&self.clients);
        clients.retain(|p| !p.is_transport_closed());
        clients.push(peer);
    }

    /// The proxied tools for this client, after the `tools/list` hooks.
    pub async fn tools(&self, context: &RequestContext<RoleServer>) -> Vec<Tool> {
        let client = client_name(&context.peer);
        let listings = self.list_all().await;
        let mut seen: HashSet<String> = self.graph_tools.clone();
        let mut out = Vec::new();
        for (server, listing) in listings {
            let Ok(tools) = listing else { continue };
            let tools: Vec<Tool> = tools.iter().map(|t| t.tool.clone()).collect();
            let tools = self.list_hooks(&server, client.as_deref(), tools).await;
            for tool in tools {
                if seen.insert(tool.name.to_string()) {
                    out.push(tool);
                } else {
                    tracing::warn!(server = %server, tool = %tool.name, "proxied tool hidden: its name is taken");
                }
            }
        }
        out
    }

    /// Runs the `tools/list` hooks of `server` over its tools; `[]` when a hook rejects.
    async fn list_hooks(&self, server: &str, client: Option<&str>, tools: Vec<Tool>) -> Vec<Tool> {
        let target = Target {
            method: HookMethod::ToolsList,
            server,
            tool: None,
            client,
        };
        let (pre, post) = (
            self.hooks.any(HookPhase::Pre, &target),
            self.hooks.any(HookPhase::Post, &target),
        );
        if !pre && !post {
            return tools;
        }
        let params = match self.hooks.pre(&target, json!({})).await {
            Verdict::Continue(params) => params,
            Verdict::Reject(message) => {
                tracing::info!(server, %message, "tools/list of this upstream rejected by a hook");
                return Vec::new();
            }
        };
        if !post {
            return tools;
        }
        let response = json!({ "tools": tools });
        match self.hooks.post(&target, &params, response).await {
            Verdict::Continue(response) => {
                match serde_json::from_value::<Vec<Tool>>(response["tools"].clone()) {
                    Ok(tools) => tools,
                    Err(e) => {
                        tracing::warn!(server, error = %e, "a tools/list hook returned tools that are not MCP tools; listing none");
                        Vec::new()
                    }
                }
            }
            Verdict::Reject(message) => {
                tracing::info!(server, %message, "tools/list of this upstream rejected by a hook");
                Vec::new()
            }
        }
    }

    /// Whether `name` is a proxied tool (listing the upstreams first if it is not known yet).
    pub(crate) async fn route(&self, name: &str) -> Option<Arc<Exposed>> {
        if let Some(found) = lock(&self.state).by_name.get(name) {
            return Some(found.clone());
        }
        let stale = {
            let state = lock(&self.state);
            self.config.upstreams.keys().any(|s| {
                let source = state
                    .listings
                    .get(s.as_str())
                    .and_then(|l| l.source.as_ref());
                match (self.pool.current_tools(s), source) {
                    (Some(current), Some(source)) => !Arc::ptr_eq(&current, source),
                    _ => true,
                }
            })
        };
        if !stale {
            return None;
        }
        self.list_all().await;
        lock(&self.state).by_name.get(name).cloned()
    }

    /// Forwards one `tools/call` of a proxied tool: hooks, arguments, progress both ways,
    /// cancellation; a 2026-07-28 request (`era`) with its client's `_meta`, and the
    /// upstream's "input required" answer passed back as is (post hooks see only results).
    pub(crate) async fn call(
        &self,
        exposed: &Exposed,
        arguments: Option<Map<String, Value>>,
        era: Option<&Era>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let server = &*exposed.server;
        let client = client_name(&context.peer);
        let target = Target {
            method: HookMethod::ToolsCall,
            server,
            tool: Some(&exposed.original),
            client: client.as_deref(),
        };
        let mut args = exposed.arguments(arguments);
        let hooked = !self.hooks.is_empty()
            && (self.hooks.any(HookPhase::Pre, &target)
                || self.hooks.any(HookPhase::Post, &target));
        let mut params_json = Value::Null;
        if hooked {
            let params = json!({"name": exposed.original, "arguments": args});
            match Box::pin(self.hooks.pre(&target, params)).await {
                Verdict::Continue(params) => {
                    args = match params.get("arguments") {
                        Some(Value::Object(a)) => a.clone(),
                        _ => Map::new(),
                    };
                    params_json = params;
                }
                Verdict::Reject(message) => {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
                }
            }
        }
        let result = match self.forward_call(exposed, args, era, context).await? {
            CallToolResponse::Complete(result) => result,
            incomplete => return Ok(incomplete),
        };
        if !hooked || !self.hooks.any(HookPhase::Post, &target) {
            return Ok(result.into());
        }
        let response = serde_json::to_value(&result)
            .map_err(|e| McpError::internal_error(format!("result not JSON: {e}"), None))?;
        let answer = match Box::pin(self.hooks.post(&target, &params_json, response)).await {
            Verdict::Continue(response) => match serde_json::from_value(response) {
                Ok(result) => result,
                Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                    "a post hook returned a response that is not a tool result: {e}"
                ))]),
            },
            Verdict::Reject(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        };
        Ok(answer.into())
    }

    async fn forward_call(
        &self,
        exposed: &Exposed,
        args: Map<String, Value>,
        era: Option<&Era>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut params = CallToolRequestParams::new(exposed.original.clone()).with_arguments(args);
        if let Some(era) = era {
            params = era.retry(params);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let token = context.meta.get_progress_token();
        let (sink, mut rx) = match token {
            Some(_) => {
                let (tx, rx) = mpsc::unbounded_channel::<UpstreamProgress>();
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let mut logs = self.pool.logs();
        let _counted = InFlight::enter(&self.in_flight, &exposed.server);
        // What the upstream asks while serving the call goes to this client (or is refused);
        // a 2026-07-28 client is asked nothing mid-call.
        let caller: Option<Arc<dyn mcpflow_upstream::Caller>> = match era {
            Some(_) => None,
            None => Some(Arc::new(caller::CallingClient::new(context))),
        };
        let mut options = stateless::send_options(era, caller).cancel(context.ct.clone());
        if let Some(sink) = sink {
            options = options.progress(sink);
        }
        // The sink moves into the call and is dropped when it ends, which ends the relay
        // below. Boxed here, where it is made: moved around unboxed, its state (rmcp's request
        // futures) was most of the bytes a pass-through call copied.
        let call = Box::pin(self.pool.send(&exposed.server, request, options));
        let relay = async {
            let (Some(rx), Some(token)) = (rx.as_mut(), token) else {
                return;
            };
            while let Some(p) = rx.recv().await {
                let mut param = ProgressNotificationParam::new(token.clone(), p.progress);
                if let Some(total) = p.total {
                    param = param.with_total(total);
                }
                if let Some(message) = p.message {
                    param = param.with_message(message);
                }
                if context.peer.notify_progress(param).await.is_err() {
                    return;
                }
            }
        };
        let forwarded = async {
            // Owned here, so that a cancelled call is dropped (and its sink with it) as soon
            // as this ends.
            let mut call = call;
            loop {
                tokio::select! {
                    r = &mut call => {
                        // Lines logged before the answer were published before the pool
                        // returned it: they go out before it.
                        while let Ok(log) = logs.try_recv() {
                            self.relay_log(&exposed.server, Ok(log), context).await;
                        }
                        // Boxed: rmcp's ServerResult is several KB, and the join moves its
                        // output three times.
                        return r.map(Box::new);
                    }
                    log = logs.recv() => self.relay_log(&exposed.server, log, context).await,
                }
            }
        };
        let (outcome, ()) = tokio::join!(forwarded, relay);
        let answer = match outcome {
            // The pool sent `notifications/cancelled` upstream; the client expects no answer,
            // and rmcp sends none for a cancelled request.
            Err(UpstreamError::Cancelled { .. }) => {
                return Err(McpError::internal_error("cancelled by the client", None));
            }
            Err(e @ UpstreamError::Rejected { .. }) => return upstream_failure(e),
            // Only this upstream's tools fail: a tool error the model can read.
            Err(e) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into());
            }
            Ok(answer) => answer,
        };
        match *answer {
            ServerResult::CallToolResult(mut result) => {
                // Upstreams speak 2025-11-25 to us; rmcp drops the field again for such clients.
                result
                    .result_type
                    .get_or_insert(rmcp::model::ResultType::COMPLETE);
                Ok(result.into())
            }
            // Only a 2026-07-28 request gets one: the client answers it and retries.
            ServerResult::InputRequiredResult(asking) if era.is_some() => {
                Ok(CallToolResponse::InputRequired(asking))
            }
            other => Err(McpError::internal_error(
                format!(
                    "upstream `{}` answered tools/call with something else: {other:?}",
                    exposed.server
                ),
                None,
            )),
        }
    }

    /// Every proxied upstream's listing, in config order: fresh ones from memory, the rest
    /// fetched concurrently.
    async fn list_all(&self) -> Vec<(Arc<str>, Result<Arc<Vec<Arc<Exposed>>>, String>)> {
        let jobs = self
            .config
            .upstreams
            .iter()
            .map(|(name, rules)| async move {
                let name: Arc<str> = name.as_str().into();
                let listing = self.listing(&name, rules).await;
                (name, listing)
            });
        futures::future::join_all(jobs).await
    }

    async fn listing(
        &self,
        server: &Arc<str>,
        rules: &ProxiedUpstream,
    ) -> Result<Arc<Vec<Arc<Exposed>>>, String> {
        let fetched = self.pool.tools(server).await;
        let mut state = lock(&self.state);
        let result = match fetched {
            Ok(tools) => {
                let listing = state.listings.entry(server.clone()).or_default();
                if let (Some(source), Some(exposed)) = (&listing.source, &listing.tools)
                    && Arc::ptr_eq(source, &tools)
                {
                    return Ok(exposed.clone());
                }
                let exposed: Vec<Arc<Exposed>> = tools
                    .iter()
                    .filter_map(|t| Exposed::new(server, rules, t.clone()).map(Arc::new))
                    .collect();
                let exposed = Arc::new(exposed);
                listing.source = Some(tools);
                listing.tools = Some(exposed.clone());
                listing.down = None;
                Ok(exposed)
            }
            Err(e) => {
                let listing = state.listings.entry(server.clone()).or_default();
                listing.source = None;
                let message = e.to_string();
                if listing.down.as_deref() != Some(&message) {
                    tracing::warn!(server = %server, error = %message, "proxied upstream cannot be listed");
                }
                listing.down = Some(message.clone());
                let mode = rules
                    .failure_mode
                    .or(self.config.failure_mode)
                    .unwrap_or_default();
                match (&listing.tools, mode) {
                    (Some(last), FailureMode::Fail) => Ok(last.clone()),
                    _ => Err(message),
                }
            }
        };
        state.rebuild_names(&self.config.upstreams, &self.graph_tools);
        result
    }

    #[expect(deprecated, reason = "servers and clients on 2025-11-25 still log")]
    async fn relay_log(
        &self,
        server: &Arc<str>,
        log: Result<UpstreamLog, tokio::sync::broadcast::error::RecvError>,
        context: &RequestContext<RoleServer>,
    ) {
        let Ok(UpstreamLog {
            server: from,
            params,
        }) = log
        else {
            return;
        };
        if from != *server || lock(&self.in_flight).get(server).copied() != Some(1) {
            return;
        }
        if let Ok(params) =
            serde_json::from_value::<rmcp::model::LoggingMessageNotificationParam>(params)
        {
            let _ = context.peer.notify_logging_message(params).await;
        }
    }

    /// `logging/setLevel` goes to every proxied upstream; one that refuses is only logged.
    #[expect(deprecated, reason = "servers and clients on 2025-11-25 still log")]
    pub async fn set_level(&self, params: rmcp::model::SetLevelRequestParams) {
        let jobs = self.config.upstreams.keys().map(|server| {
            let request = ClientRequest::SetLevelRequest(rmcp::model::SetLevelRequest::new(
                params.clone(),
            ));
            async move {
                if let Err(e) = self.pool.send(server, request, SendOptions::default()).await {
                    tracing::debug!(server = %server, error = %e, "upstream refused logging/setLevel");
                }
            }
        });
        futures::future::join_all(jobs).await;
    }

    /// Whether `server` is one of the upstreams this gateway passes through.
    fn proxies(&self, server: &str) -> bool {
        self.config.upstreams.contains_key(server)
    }
}

impl State {
    fn rebuild_names(
        &mut self,
        order: &IndexMap<String, ProxiedUpstream>,
        graph_tools: &HashSet<String>,
    ) {
        self.by_name.clear();
        for server in order.keys() {
            let Some(tools) = self
                .listings
                .get(server.as_str())
                .and_then(|l| l.tools.as_ref())
            else {
                continue;
            };
            for t in tools.iter() {
                if !graph_tools.contains(&*t.tool.name) {
                    self.by_name
                        .entry(t.tool.name.to_string())
                        .or_insert_with(|| t.clone());
                }
            }
        }
    }
}

/// Counts one call in flight on an upstream for as long as it lives.
struct InFlight<'a> {
    map: &'a Mutex<HashMap<Arc<str>, usize>>,
    server: Arc<str>,
}

impl<'a> InFlight<'a> {
    fn enter(map: &'a Mutex<HashMap<Arc<str>, usize>>, server: &Arc<str>) -> InFlight<'a> {
        *lock(map).entry(server.clone()).or_default() += 1;
        InFlight {
            map,
            server: server.clone(),
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(n) = lock(self.map).get_mut(&self.server) {
            *n = n.saturating_sub(1);
        }
    }
}

/// Re-announces the pool's upstream list changes to our clients, for as long as the proxy
/// lives.
async fn watch_changes(
    proxy: std::sync::Weak<Proxy>,
    mut changes: tokio::sync::broadcast::Receiver<Arc<str>>,
) {
    loop {
        let server = match changes.recv().await {
            Ok(server) => server,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let Some(proxy) = proxy.upgrade() else { return };
        if !proxy.proxies(&server) {
            continue;
        }
        let clients: Vec<Peer<RoleServer>> = lock(&proxy.clients).clone();
        for peer in clients {
            let _ = peer.notify_tool_list_changed().await;
        }
    }
}

/// How an upstream failure reaches the client: the upstream's own JSON-RPC refusal as is (the
/// gateway is transparent), anything else as a tool error the model can read.
pub(crate) fn upstream_failure<T>(e: UpstreamError) -> Result<T, McpError> {
    match e {
        UpstreamError::Rejected {
            code,
            message,
            data,
            ..
        } => Err(McpError::new(
            rmcp::model::ErrorCode(code),
            message,
            data.map(|data| *data),
        )),
        other => Err(McpError::internal_error(other.to_string(), None)),
    }
}

fn client_name(peer: &Peer<RoleServer>) -> Option<String> {
    peer.peer_info().map(|info| info.client_info.name.clone())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the server offers: tools always; with a proxy, `tools.listChanged` (re-announced from
/// upstreams), and resources and prompts when some upstream passes them through.
pub(crate) fn capabilities(proxy: Option<&Proxy>) -> rmcp::model::ServerCapabilities {
    let builder = rmcp::model::ServerCapabilities::builder();
    match proxy {
        None => builder.enable_tools().build(),
        Some(p) => {
            let mut caps = builder.enable_tools().enable_tool_list_changed().build();
            // Upstreams' `notifications/message` are relayed and `logging/setLevel` forwarded.
            caps.logging = Some(Default::default());
            if p.passes(false) {
                let mut resources = rmcp::model::ResourcesCapability::default();
                resources.subscribe = Some(true);
                caps.resources = Some(resources);
            }
            if p.passes(true) {
                caps.prompts = Some(rmcp::model::PromptsCapability::default());
            }
            if p.passes(false) || p.passes(true) {
                caps.completions = Some(Default::default());
            }
            caps
        }
    }
}

pub(crate) async fn list_resources(proxy: Option<&Proxy>) -> rmcp::model::ListResourcesResult {
    match proxy {
        Some(p) => p.list_resources().await,
        None => rmcp::model::ListResourcesResult::default(),
    }
}

pub(crate) async fn list_resource_templates(
    proxy: Option<&Proxy>,
) -> rmcp::model::ListResourceTemplatesResult {
    match proxy {
        Some(p) => p.list_resource_templates().await,
        None => rmcp::model::ListResourceTemplatesResult::default(),
    }
}

pub(crate) async fn read_resource(
    proxy: Option<&Proxy>,
    params: rmcp::model::ReadResourceRequestParams,
    era: Option<&Era>,
) -> Result<rmcp::model::ReadResourceResponse, McpError> {
    match proxy {
        Some(p) => p.read_resource(params, era).await,
        None => Err(McpError::resource_not_found(
            format!("no resource `{}`", params.uri),
            None,
        )),
    }
}

pub(crate) async fn complete(
    proxy: Option<&Proxy>,
    params: rmcp::model::CompleteRequestParams,
) -> Result<rmcp::model::CompleteResult, McpError> {
    match proxy {
        Some(p) => p.complete(params).await,
        None => Ok(rmcp::model::CompleteResult::default()),
    }
}

pub(crate) async fn subscription(
    proxy: Option<&Proxy>,
    uri: String,
    subscribe: bool,
) -> Result<(), McpError> {
    match proxy {
        Some(p) => p.subscription(uri, subscribe).await,
        None => Err(McpError::resource_not_found(
            format!("no resource `{uri}`"),
            None,
        )),
    }
}

#[expect(deprecated, reason = "servers and clients on 2025-11-25 still log")]
pub(crate) async fn set_level(
    proxy: Option<&Proxy>,
    params: rmcp::model::SetLevelRequestParams,
) -> Result<(), McpError> {
    match proxy {
        Some(p) => {
            p.set_level(params).await;
            Ok(())
        }
        None => Err(McpError::method_not_found::<
            rmcp::model::SetLevelRequestMethod,
        >()),
    }
}

pub(crate) async fn list_prompts(proxy: Option<&Proxy>) -> rmcp::model::ListPromptsResult {
    match proxy {
        Some(p) => p.list_prompts().await,
        None => rmcp::model::ListPromptsResult::default(),
    }
}

pub(crate) async fn get_prompt(
    proxy: Option<&Proxy>,
    params: rmcp::model::GetPromptRequestParams,
    era: Option<&Era>,
) -> Result<rmcp::model::GetPromptResponse, McpError> {
    match proxy {
        Some(p) => p.get_prompt(params, era).await,
        None => Err(McpError::invalid_params(
            format!("unknown prompt `{}`", params.name),
            None,
        )),
    }
}
