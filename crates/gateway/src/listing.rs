//! The proxied tools: each upstream's listing renamed, filtered and overridden
//! ([`crate::expose`]), merged in config order after the graph tools, and the name → tool map
//! calls are routed by.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use indexmap::IndexMap;
use mcpflow_model::proxy::{FailureMode, HookMethod, ProxiedUpstream};
use rmcp::RoleServer;
use rmcp::model::Tool;
use rmcp::service::RequestContext;
use serde_json::Value;

use crate::error::GatewayError;
use crate::expose::Exposed;
use crate::gateway::{Gateway, client_name, lock};
use crate::hooks::Traffic;
use crate::search::Builtin;

/// Where a call the gateway answers goes: a proxied tool (the upstream and the tool under its
/// own name), or a built-in tool of tool search mode.
#[derive(Clone)]
pub struct Route(pub(crate) Target);

#[derive(Clone)]
pub(crate) enum Target {
    Proxied(Arc<Exposed>),
    Builtin(Builtin),
}

#[derive(Default)]
pub(crate) struct Listings {
    by_server: HashMap<Arc<str>, Listing>,
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

type Listed = Vec<(Arc<str>, Result<Arc<Vec<Arc<Exposed>>>, String>)>;

/// At start, how long [`Gateway::check_names`] waits for the upstreams to answer. One that
/// takes longer starts on in the background; its tools come with a list change.
// 10 s: an `npx` server from the cache starts in 1–5 s on a loaded machine, and a first listing
// without its tools surprises a client that lists once; a stuck one costs this once, at start.
const START_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

impl Gateway {
    /// Starts every upstream, waits for them (at most a few seconds: a stuck one must not
    /// stall the server's start), lists them and reports names taken twice (by two upstream
    /// tools, or by an upstream tool and a graph tool), naming both owners. Upstreams that
    /// cannot be reached yet are only logged: they may come up later, and their tools are
    /// then listed like any, a name already taken hidden.
    pub async fn check_names(&self) -> Result<(), GatewayError> {
        let starts = self.config.upstreams.keys().map(|server| async move {
            if !self.pool.started_within(server, START_PATIENCE).await {
                tracing::warn!(server = %server, patience = ?START_PATIENCE, "proxied upstream not up at start; it starts on in the background and its tools are listed once it answers");
            }
        });
        futures::future::join_all(starts).await;
        let listings = self.list_all().await;
        let mut owners: HashMap<&str, String> = self
            .graph_tools
            .iter()
            .map(|n| (n.as_str(), format!("graph tool `{n}`")))
            .collect();
        if self.tool_search().is_some() {
            for b in Builtin::ALL {
                owners.insert(b.name(), "the tool search's built-in tool".into());
            }
        }
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
            Err(GatewayError::NameClash(format!(
                "{}; give the upstreams a prefix (`naming: prefix`) or rename the tools",
                clashes.join("; ")
            )))
        }
    }

    /// What this client is listed: the graph tools, then every proxied upstream's, each after
    /// its `tools/list` hooks. A proxied tool whose name is taken is left out (and logged). In
    /// tool search mode only the pinned proxied tools are listed, then the two built-in tools.
    pub async fn list_tools(
        &self,
        graph_tools: Vec<Tool>,
        context: &RequestContext<RoleServer>,
    ) -> Vec<Tool> {
        let client = client_name(&context.peer);
        let client = client.as_deref();
        let caller = crate::hooks::caller_in(context);
        let mut out = Box::pin(self.hooks.around_list(
            Traffic::graph(HookMethod::ToolsList, None, client).sent_by(caller),
            graph_tools,
        ))
        .await;
        if !self.active {
            return out;
        }
        let proxied = Box::pin(self.proxied_tools(client, caller)).await;
        match self.tool_search() {
            None => out.extend(proxied.into_iter().map(|(_, tool)| tool)),
            Some(search) => {
                out.extend(
                    proxied
                        .into_iter()
                        .filter(|(_, tool)| search.is_pinned(&tool.name))
                        .map(|(_, tool)| tool),
                );
                out.extend(Builtin::ALL.map(Builtin::tool));
            }
        }
        out
    }

    /// The proxied tools this client may see, with their upstreams: every upstream's listing
    /// after its `tools/list` hooks, a name taken already left out.
    pub(crate) async fn proxied_tools(
        &self,
        client: Option<&str>,
        caller: Option<&Value>,
    ) -> Vec<(Arc<str>, Tool)> {
        let listings = Box::pin(self.list_all()).await;
        let mut seen: HashSet<String> = self.graph_tools.clone();
        let mut out = Vec::new();
        for (server, listing) in listings {
            let Ok(tools) = listing else { continue };
            let tools: Vec<Tool> = tools.iter().map(|t| t.tool.clone()).collect();
            let traffic =
                Traffic::proxied(HookMethod::ToolsList, &server, None, client).sent_by(caller);
            for tool in Box::pin(self.hooks.around_list(traffic, tools)).await {
                if seen.insert(tool.name.to_string()) {
                    out.push((server.clone(), tool));
                } else {
                    tracing::warn!(server = %server, tool = %tool.name, "proxied tool hidden: its name is taken");
                }
            }
        }
        out
    }

    /// Where a call of `name` goes, when it is a proxied tool (listing the upstreams first if
    /// it is not known yet) or, in tool search mode, one of its built-in tools.
    pub async fn route(&self, name: &str) -> Option<Route> {
        if !self.active || self.graph_tools.contains(name) {
            return None;
        }
        if self.tool_search().is_some()
            && let Some(builtin) = Builtin::of(name)
        {
            return Some(Route(Target::Builtin(builtin)));
        }
        if let Some(found) = lock(&self.listings).by_name.get(name) {
            return Some(Route(Target::Proxied(found.clone())));
        }
        let stale = {
            let listings = lock(&self.listings);
            self.config.upstreams.keys().any(|s| {
                let source = listings
                    .by_server
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
        lock(&self.listings)
            .by_name
            .get(name)
            .cloned()
            .map(|exposed| Route(Target::Proxied(exposed)))
    }

    /// The proxied tools' names as last listed (after [`Gateway::check_names`], every
    /// reachable upstream's).
    pub fn listed_names(&self) -> Vec<String> {
        lock(&self.listings).by_name.keys().cloned().collect()
    }

    /// A proxied tool as last listed, for rmcp's checks of a call's `Mcp-Param-*` headers
    /// against the tool's `x-mcp-header` properties (SEP-2243); `None` before the first
    /// listing, which skips them.
    pub fn listed_tool(&self, name: &str) -> Option<Tool> {
        if self.tool_search().is_some()
            && let Some(builtin) = Builtin::of(name)
        {
            return Some(builtin.tool());
        }
        lock(&self.listings)
            .by_name
            .get(name)
            .map(|exposed| exposed.tool.clone())
    }

    /// Every proxied upstream's listing, in config order: fresh ones from memory, the rest
    /// fetched concurrently from the upstreams that are up. One that is (re)starting is not
    /// waited for: it counts as down (see `failureMode`) until it is up, when the pool
    /// announces a list change.
    async fn list_all(&self) -> Listed {
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
        let fetched = self.pool.tools_now(server).await;
        let mut listings = lock(&self.listings);
        let result = match fetched {
            Ok(tools) => {
                let listing = listings.by_server.entry(server.clone()).or_default();
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
                let listing = listings.by_server.entry(server.clone()).or_default();
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
        listings.rebuild_names(&self.config.upstreams, &self.graph_tools);
        result
    }
}

impl Listings {
    fn rebuild_names(
        &mut self,
        order: &IndexMap<String, ProxiedUpstream>,
        graph_tools: &HashSet<String>,
    ) {
        self.by_name.clear();
        for server in order.keys() {
            let Some(tools) = self
                .by_server
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
