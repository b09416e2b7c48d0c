//! [`Gateway`]: the proxied side of one served config, and what it declares.
//!
//! Each upstream's list is the pool's one cached list (fetched on first need, dropped when the
//! upstream says it changed, `notifications/tools/list_changed`, which is then re-announced to
//! our clients); the renamed, filtered view of it here ([`crate::listing`]) is rebuilt when the
//! pool's list is another one. An upstream that cannot be reached drops out of the list
//! (`failureMode: hide`) or keeps its last known tools whose calls then fail (`fail`); the
//! others are untouched either way.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use mcpflow_model::Config;
use mcpflow_model::proxy::{ProxiedUpstream, ProxyConfig};
use mcpflow_upstream::{ContentChange, ContentList, UpstreamPool};
use rmcp::model::{ErrorCode, ServerCapabilities};
use rmcp::service::Peer;
use rmcp::{ErrorData as McpError, RoleServer};

use crate::error::GatewayError;
use crate::hooks::{Hooks, ToolRunner};

/// The pass-through side of the server, with its hooks. Cheap to share; one per served config.
pub struct Gateway {
    pub(crate) pool: UpstreamPool,
    /// Whether the config has `proxy:` at all: without it the gateway declares nothing beyond
    /// the graph tools (no list changes, no logging), as a plain graph server does.
    pub(crate) active: bool,
    pub(crate) config: ProxyConfig,
    pub(crate) hooks: Hooks,
    /// Names of this config's graph tools: they win over any proxied tool of the same name.
    pub(crate) graph_tools: HashSet<String>,
    pub(crate) listings: Mutex<crate::listing::Listings>,
    /// Clients to tell when a proxied list changes.
    clients: Mutex<Vec<Peer<RoleServer>>>,
    pub(crate) content: crate::content::Routes,
    /// Calls in flight per upstream: an upstream's log lines are relayed to a caller only
    /// while its call is the only one there, so no client reads another client's logs.
    pub(crate) in_flight: Mutex<HashMap<Arc<str>, usize>>,
}

/// A family of methods the gateway declares only when some upstream passes it through.
#[derive(Clone, Copy, Debug)]
pub enum Offer {
    Resources,
    Prompts,
    Completions,
}

impl Gateway {
    /// Compiles the hooks and starts following the pool's list changes. `runner` runs the
    /// hooks whose body is a graph tool.
    pub fn new(
        config: &Config,
        pool: UpstreamPool,
        runner: Arc<dyn ToolRunner>,
    ) -> Result<Arc<Gateway>, GatewayError> {
        let hooks = Hooks::new(&config.hooks, runner)?;
        if let Some(search) = config.proxy.as_ref().and_then(|p| p.tool_search.as_ref())
            && search.is_enabled()
            && let Some(taken) = config
                .tools
                .iter()
                .find(|t| crate::search::Builtin::of(&t.name).is_some())
        {
            return Err(GatewayError::NameClash(format!(
                "graph tool `{}` has the name of a built-in tool of `proxy.toolSearch`; rename the graph tool",
                taken.name
            )));
        }
        let changes = pool.list_changes();
        let contents = pool.content_changes();
        let gateway = Arc::new(Gateway {
            pool,
            active: config.proxy.is_some(),
            config: config.proxy.clone().unwrap_or_default(),
            hooks,
            graph_tools: config.tools.iter().map(|t| t.name.clone()).collect(),
            listings: Mutex::default(),
            clients: Mutex::new(Vec::new()),
            content: crate::content::Routes::default(),
            in_flight: Mutex::new(HashMap::new()),
        });
        if gateway.active
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(watch_changes(Arc::downgrade(&gateway), changes, contents));
        }
        Ok(gateway)
    }

    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// The upstreams passed through, in config order.
    pub fn upstreams(&self) -> impl Iterator<Item = (&str, &ProxiedUpstream)> {
        self.config.upstreams.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Remembers the client so it hears about list changes.
    pub fn register_client(&self, peer: Peer<RoleServer>) {
        if !self.active {
            return;
        }
        let mut clients = lock(&self.clients);
        clients.retain(|p| !p.is_transport_closed());
        clients.push(peer);
    }

    /// What the server offers: tools always; with `proxy:`, `tools.listChanged` (re-announced
    /// from upstreams) and logging, and resources and prompts when some upstream passes them.
    pub fn capabilities(&self) -> ServerCapabilities {
        let builder = ServerCapabilities::builder();
        if !self.active {
            return builder.enable_tools().build();
        }
        let mut caps = builder.enable_tools().enable_tool_list_changed().build();
        // Upstreams' `notifications/message` are relayed and `logging/setLevel` forwarded.
        caps.logging = Some(Default::default());
        // Upstreams' resource and prompt list changes are re-announced like their tools'.
        if self.passes(false) {
            let mut resources = rmcp::model::ResourcesCapability::default();
            resources.subscribe = Some(true);
            resources.list_changed = Some(true);
            caps.resources = Some(resources);
        }
        if self.passes(true) {
            let mut prompts = rmcp::model::PromptsCapability::default();
            prompts.list_changed = Some(true);
            caps.prompts = Some(prompts);
        }
        if self.passes(false) || self.passes(true) {
            caps.completions = Some(Default::default());
        }
        caps
    }

    /// Refuses, as method not found, a method of a capability [`Gateway::capabilities`] does
    /// not declare: the server answers exactly what it declares (a 2026-07-28 client checks).
    pub fn offers(&self, offer: Offer) -> Result<(), McpError> {
        let offered = match offer {
            Offer::Resources => self.passes(false),
            Offer::Prompts => self.passes(true),
            Offer::Completions => self.passes(false) || self.passes(true),
        };
        if offered {
            return Ok(());
        }
        let method = match offer {
            Offer::Resources => "resources",
            Offer::Prompts => "prompts",
            Offer::Completions => "completion",
        };
        Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("this server offers no {method} (it declares no such capability)"),
            None,
        ))
    }
}

/// Re-announces the pool's upstream list changes (tools, resources, prompts) to our clients,
/// for as long as the gateway lives.
async fn watch_changes(
    gateway: std::sync::Weak<Gateway>,
    mut changes: tokio::sync::broadcast::Receiver<Arc<str>>,
    mut contents: tokio::sync::broadcast::Receiver<ContentChange>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let change = tokio::select! {
            change = changes.recv() => match change {
                Ok(server) => (server, None),
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            },
            change = contents.recv() => match change {
                Ok(c) => (c.server, Some(c.list)),
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            },
        };
        let Some(gateway) = gateway.upgrade() else {
            return;
        };
        let (server, list) = change;
        if !gateway.announces(&server, list) {
            continue;
        }
        let clients: Vec<Peer<RoleServer>> = lock(&gateway.clients).clone();
        for peer in clients {
            let _ = match list {
                None => peer.notify_tool_list_changed().await,
                Some(ContentList::Resources) => peer.notify_resource_list_changed().await,
                Some(ContentList::Prompts) => peer.notify_prompt_list_changed().await,
            };
        }
    }
}

impl Gateway {
    /// Whether a list change of `server` (tools when `list` is `None`) is ours to re-announce:
    /// it is proxied, and passes the list that changed.
    pub(crate) fn announces(&self, server: &str, list: Option<ContentList>) -> bool {
        let Some(upstream) = self.config.upstreams.get(server) else {
            return false;
        };
        match list {
            None => true,
            // Passed unless the config says `false`, as `passing` reads it.
            Some(ContentList::Resources) => upstream.resources != Some(false),
            Some(ContentList::Prompts) => upstream.prompts != Some(false),
        }
    }
}

/// The calling client's name from its `initialize`, for hooks' `metadata.clientId`.
pub(crate) fn client_name(peer: &Peer<RoleServer>) -> Option<String> {
    peer.peer_info().map(|info| info.client_info.name.clone())
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
